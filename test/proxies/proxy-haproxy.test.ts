// HAProxy 2.6 (Debian) in front of the app: compression at the proxy
// (`compression algo gzip`), with the plugin's no-transform and without it,
// and compression in the app with HAProxy not compressing. HTTP/1.1 on one port, cleartext HTTP/2 on a second
// (`bind … proto h2`). Every outcome is the verdict of deployment-checks.ts's
// checker over the bytes received.
import t from 'tap'
import { proxySkip } from './proxy-harness'
import { GZIP_IN_APP_RIGHT_TRAILERS, proxyConfigTests } from './deployment-checks'
import { haproxyConfig } from './proxy-configs'

t.test('haproxy', { skip: proxySkip('haproxy') }, async (t) => {
  // The plugin's default (noTransform: true): every response that carries a digest field says
  // no-transform, and HAProxy leaves it identity; the fields are right though HAProxy compresses.
  proxyConfigTests(t, 'haproxy', {
    name: 'compression at the proxy',
    compressInApp: false,
    config: (p) => haproxyConfig(p, 'compression algo gzip\n  compression type application/json'),
    table: {
      json: '200 identity | right right right',
      'json without gzip': '200 identity | right right right',
      'json no-transform': '200 identity | right right right',
      stream: '200 identity | right right right | trailers: content-digest repr-digest unencoded-digest',
      'stream no-transform': '200 identity | right right right | trailers: content-digest repr-digest unencoded-digest',
      file: '200 identity | right right right',
      head: '200 identity | right right right',
      'head file': '200 identity | right right right',
      range: '206 identity | right right right',
      'not modified': '304 identity | absent absent absent',
      upload: '201 identity | right right right',
      'upload, wrong digest': '400 identity | right right right',
      // The control route sets its fields by hand (the plugin off): nothing says no-transform.
      control: '200 gzip | wrong wrong wrong'
    },
    te: 'trailers',
    appTrailer: 'trailer',
    varyAcceptEncoding: false
  })
  // HAProxy compresses identity responses (Content-Digest wrong, in headers
  // or trailers) except those with `Cache-Control: no-transform`; it forwards
  // `TE: trailers` and the app's trailers. Here the plugin does not mark its
  // responses (noTransform: false): only the /nt routes, which set it themselves.
  proxyConfigTests(t, 'haproxy', {
    name: 'compression at the proxy, noTransform: false',
    compressInApp: false,
    pluginOptions: { noTransform: false },
    config: (p) => haproxyConfig(p, 'compression algo gzip\n  compression type application/json'),
    table: {
      json: '200 gzip | wrong right right',
      'json without gzip': '200 identity | right right right',
      'json no-transform': '200 identity | right right right',
      stream: '200 gzip | wrong right right | trailers: content-digest repr-digest unencoded-digest',
      'stream no-transform': '200 identity | right right right | trailers: content-digest repr-digest unencoded-digest',
      file: '200 gzip | wrong right right',
      head: '200 identity | right right right',
      'head file': '200 identity | right right right',
      range: '206 identity | right right right',
      'not modified': '304 identity | absent absent absent',
      upload: '201 gzip | wrong right right',
      'upload, wrong digest': '400 identity | right right right',
      control: '200 gzip | wrong wrong wrong'
    },
    te: 'trailers',
    appTrailer: 'trailer',
    varyAcceptEncoding: true
  })
  // The recommended configuration: the app compresses, HAProxy passes its bytes through.
  proxyConfigTests(t, 'haproxy', {
    name: 'gzip in the app',
    compressInApp: true,
    config: (p) => haproxyConfig(p, ''),
    table: GZIP_IN_APP_RIGHT_TRAILERS,
    te: 'trailers',
    appTrailer: 'trailer',
    varyAcceptEncoding: true
  })
})
