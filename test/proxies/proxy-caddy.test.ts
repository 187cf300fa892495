// Caddy 2.6 (Debian) in front of the app, in its common configurations:
// `encode gzip` at the proxy; compression in the app with a bare
// reverse_proxy (whose Go transport asks the app for gzip when the client
// did not, and decodes it); and compression in the app with the transport's
// `compression off`. HTTP/1.1 and cleartext HTTP/2 (`protocols h1 h2c`) on one
// port. Every outcome is the verdict of deployment-checks.ts's checker over
// the bytes received.
import t from 'tap'
import { proxySkip } from './proxy-harness'
import { GZIP_IN_APP_RIGHT_TRAILERS, proxyConfigTests, upstreamAcceptEncoding } from './deployment-checks'
import { caddyConfig } from './proxy-configs'

t.test('caddy', { skip: proxySkip('caddy') }, async (t) => {
  // `encode gzip` compresses buffered responses whatever their Cache-Control
  // (Content-Digest wrong); Caddy forwards `TE: trailers`, so a stream's
  // digests come as trailers, and it leaves those responses uncompressed.
  proxyConfigTests(t, 'caddy', {
    name: 'encode gzip',
    compressInApp: false,
    config: (p) => caddyConfig(p, 'encode gzip', ''),
    table: {
      json: '200 gzip | wrong right right',
      'json without gzip': '200 identity | right right right',
      'json no-transform': '200 gzip | wrong right right',
      stream: '200 identity | right right right | trailers: content-digest repr-digest unencoded-digest',
      'stream no-transform': '200 identity | right right right | trailers: content-digest repr-digest unencoded-digest',
      file: '200 gzip | wrong right right',
      head: '200 gzip | right right right',
      'head file': '200 gzip | right right right',
      range: '206 identity | right right right',
      'not modified': '304 identity | absent absent absent',
      upload: '201 identity | right right right',
      'upload, wrong digest': '400 identity | right right right',
      control: '200 gzip | wrong wrong wrong'
    },
    te: 'trailers',
    appTrailer: 'trailer',
    varyAcceptEncoding: true
  })
  // A client without Accept-Encoding: the transport asks the app for gzip and
  // decodes it, so the client gets identity bytes under the gzip bytes' Content-Digest.
  proxyConfigTests(t, 'caddy', {
    name: 'gzip in the app',
    compressInApp: true,
    config: (p) => caddyConfig(p, '', ''),
    table: { ...GZIP_IN_APP_RIGHT_TRAILERS, 'json without gzip': '200 identity | wrong right right' },
    te: 'trailers',
    appTrailer: 'trailer',
    varyAcceptEncoding: true,
    also: async (t, send) => {
      t.equal(await upstreamAcceptEncoding(send, 'caddy'), 'gzip', 'the transport asks for gzip')
    }
  })
  // The recommended configuration.
  proxyConfigTests(t, 'caddy', {
    name: 'gzip in the app, upstream compression off',
    compressInApp: true,
    config: (p) => caddyConfig(p, '', '{\n    transport http {\n      compression off\n    }\n  }'),
    table: GZIP_IN_APP_RIGHT_TRAILERS,
    te: 'trailers',
    appTrailer: 'trailer',
    varyAcceptEncoding: true,
    also: async (t, send) => {
      t.equal(await upstreamAcceptEncoding(send, 'caddy'), null, 'the transport passes the client\'s (none)')
    }
  })
})
