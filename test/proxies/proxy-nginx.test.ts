// nginx 1.22 (Debian) in front of the app, in its common configurations:
// gzip at the proxy (`gzip on; gzip_proxied any`), gzip on with gzip_proxied
// off (which does not stop it: gzip_proxied only concerns requests that came
// through another proxy, with a Via field), and compression in the app with
// nginx's gzip off (its default). HTTP/1.1 on one port, cleartext HTTP/2 on a
// second (`listen … http2`); nginx speaks HTTP/1.1 to the app. Every outcome is
// the verdict of deployment-checks.ts's checker over the bytes received.
import t from 'tap'
import { proxySkip } from './proxy-harness'
import { GZIP_IN_APP_RIGHT, GZIP_JSON, checkFields, fieldValue, proxyConfigTests, verdict } from './deployment-checks'
import { nginxConfig } from './proxy-configs'

/**
 * nginx compressing what the app sent uncompressed: Content-Digest is the
 * identity body's over gzip bytes (wrong), Repr-Digest and Unencoded-Digest
 * stay right; `Cache-Control: no-transform` is not honoured; a 206 is not
 * compressed; a HEAD gets `Content-Encoding: gzip` and keeps the empty
 * content's Content-Digest. TE is not forwarded, so the app puts a stream's
 * digests in headers (buffered) and nginx compresses them too.
 */
const GZIP_AT_NGINX = {
  json: '200 gzip | wrong right right',
  'json without gzip': '200 identity | right right right',
  'json no-transform': '200 gzip | wrong right right',
  stream: '200 gzip | wrong right right',
  'stream no-transform': '200 gzip | wrong right right',
  file: '200 gzip | wrong right right',
  head: '200 gzip | right right right',
  'head file': '200 gzip | right right right',
  range: '206 identity | right right right',
  'not modified': '304 identity | absent absent absent',
  upload: '201 identity | right right right',
  'upload, wrong digest': '400 identity | right right right',
  control: '200 gzip | wrong wrong wrong'
} as const

t.test('nginx', { skip: proxySkip('nginx') }, async (t) => {
  proxyConfigTests(t, 'nginx', {
    name: 'gzip at the proxy',
    compressInApp: false,
    config: (p) => nginxConfig(p, 'gzip on; gzip_proxied any; gzip_types application/json;'),
    table: GZIP_AT_NGINX,
    te: null,
    appTrailer: 'announced only',
    varyAcceptEncoding: false
  })
  proxyConfigTests(t, 'nginx', {
    name: 'gzip on, gzip_proxied off',
    compressInApp: false,
    config: (p) => nginxConfig(p, 'gzip on; gzip_proxied off; gzip_types application/json;'),
    table: GZIP_AT_NGINX,
    te: null,
    appTrailer: 'announced only',
    varyAcceptEncoding: false,
    also: async (t, send) => {
      // gzip_proxied governs requests that came through another proxy (a Via field) only.
      const res = await send({ ...GZIP_JSON, headers: { ...GZIP_JSON.headers, via: '1.1 edge' } })
      t.equal(res.headers['content-encoding'], undefined, 'a request with Via is not compressed')
      t.same(checkFields(res), { 'content-digest': 'right', 'repr-digest': 'right', 'unencoded-digest': 'right' })
    }
  })
  // Strict mode: Repr-Digest covers the coded representation, which is the
  // identity bytes the app sent; nginx's gzip makes it as wrong as Content-Digest
  // (the table's Repr-Digest column reads it in the default mode: over the decoded bytes).
  proxyConfigTests(t, 'nginx', {
    name: 'gzip at the proxy, strict mode',
    compressInApp: false,
    pluginOptions: { strict: true },
    config: (p) => nginxConfig(p, 'gzip on; gzip_proxied any; gzip_types application/json;'),
    table: GZIP_AT_NGINX,
    te: null,
    appTrailer: 'announced only',
    varyAcceptEncoding: false,
    also: async (t, send) => {
      const res = await send(GZIP_JSON)
      t.equal(res.headers['content-encoding'], 'gzip')
      t.equal(fieldValue(res, 'repr-digest'), fieldValue(res, 'content-digest'))
      t.equal(verdict(fieldValue(res, 'repr-digest'), res.body), 'wrong', 'strict Repr-Digest over the coded bytes received')
    }
  })
  // The recommended configuration: the app compresses (@fastify/compress), nginx passes its bytes through.
  proxyConfigTests(t, 'nginx', {
    name: 'gzip in the app',
    compressInApp: true,
    config: (p) => nginxConfig(p, 'gzip off;'),
    table: GZIP_IN_APP_RIGHT,
    te: null,
    appTrailer: 'announced only',
    varyAcceptEncoding: true
  })
})
