// Varnish 7.1 (Debian), a shared cache, in front of the app: its default VCL
// (builtin: GET and HEAD cached, `http_gzip_support` on) over an app that
// does not compress and over one that does; Varnish compressing itself
// (`beresp.do_gzip`); and the recommended VCL. HTTP/1.1 and cleartext HTTP/2
// (`-p feature=+http2`) on one port. Every outcome is the verdict of
// deployment-checks.ts's checker over the bytes received.
import t from 'tap'
import { proxySkip } from './proxy-harness'
import { FILE_BODY, JSON_BODY, RANGE, fieldValue, proxyConfigTests, sfDigest, upstreamAcceptEncoding } from './deployment-checks'
import { varnishConfig } from './proxy-configs'

/**
 * Pass to the app what Varnish would otherwise answer from a cached object
 * with the object's header fields: ranges, HEAD, conditional requests, and
 * requests of clients that do not take gzip (Varnish would decode the
 * stored gzip body for them).
 */
export const RECOMMENDED_VCL = `sub vcl_recv {
  if (req.http.Range || req.method == "HEAD" || req.http.Accept-Encoding !~ "gzip" ||
      req.http.If-None-Match || req.http.If-Modified-Since) {
    return (pass);
  }
}`

const DO_GZIP_VCL = `sub vcl_backend_response {
  if (beresp.http.Content-Type ~ "json") {
    set beresp.do_gzip = true;
  }
}`

t.test('varnish', { skip: proxySkip('varnish') }, async (t) => {
  // A HEAD, a range and a 304 are answered from the cached 200, with its
  // Content-Digest: the whole body's (wrong for the empty content of HEAD and
  // 304, and for the part of a 206); Repr-Digest and Unencoded-Digest right.
  // Varnish drops TE and the app's trailers; a response with trailers that it
  // fetches into the cache reaches an HTTP/1.1 client without its last chunk
  // (cut off), an HTTP/2 client whole or cut off, depending on timing; passed
  // (recommended VCL, no gzip asked), HTTP/1.1 too may get it whole.
  proxyConfigTests(t, 'varnish', {
    name: 'default VCL',
    compressInApp: false,
    config: (p) => varnishConfig(p, ''),
    table: {
      json: '200 identity | right right right',
      'json without gzip': '200 identity | right right right',
      'json no-transform': '200 identity | right right right',
      stream: '200 identity | right right right',
      'stream no-transform': '200 identity | right right right',
      file: '200 identity | right right right',
      head: '200 identity | wrong right right',
      'head file': '200 identity | wrong right right',
      range: '206 identity | wrong right right',
      'not modified': '304 identity | wrong right right',
      upload: '201 identity | right right right',
      'upload, wrong digest': '400 identity | right right right',
      control: '200 identity | wrong wrong wrong'
    },
    te: null,
    appTrailer: { h1: 'cut off', h2: ['absent', 'cut off'] },
    varyAcceptEncoding: false,
    also: async (t, send) => {
      t.equal(await upstreamAcceptEncoding(send, 'varnish'), 'gzip', 'Varnish asks the app for gzip')
      const head = await send({ method: 'HEAD', path: '/json' })
      t.equal(fieldValue(head, 'content-digest'), sfDigest(JSON_BODY), 'HEAD: the cached 200\'s Content-Digest')
      const range = await send({ path: '/files/data.json', headers: { range: `bytes=${RANGE.first}-${RANGE.last}` } })
      t.equal(range.body.length, RANGE.last - RANGE.first + 1)
      t.equal(fieldValue(range, 'content-digest'), sfDigest(FILE_BODY), '206: the whole file\'s Content-Digest')
      const etag = (await send({ path: '/files/data.json' })).headers.etag as string
      const notModified = await send({ path: '/files/data.json', headers: { 'if-none-match': etag } })
      t.equal(notModified.status, 304)
      t.equal(fieldValue(notModified, 'content-digest'), sfDigest(FILE_BODY),
        '304: the Content-Digest of the cached 200 it validates')
    }
  })
  // The app's gzip is stored; a client without gzip gets it decoded by Varnish
  // under the gzip bytes' Content-Digest.
  proxyConfigTests(t, 'varnish', {
    name: 'default VCL, gzip in the app',
    compressInApp: true,
    config: (p) => varnishConfig(p, ''),
    table: {
      json: '200 gzip | right right right',
      'json without gzip': '200 identity | wrong right right',
      'json no-transform': '200 gzip | right right right',
      stream: '200 gzip | right right right',
      'stream no-transform': '200 gzip | right right right',
      file: '200 gzip | right right right',
      head: '200 gzip | wrong right right',
      'head file': '200 gzip | wrong right right',
      range: '206 gzip | wrong right right',
      'not modified': '304 gzip | wrong right right',
      upload: '201 identity | right right right',
      'upload, wrong digest': '400 identity | right right right',
      control: '200 gzip | wrong wrong wrong'
    },
    te: null,
    appTrailer: { h1: 'cut off', h2: ['absent', 'cut off'] },
    varyAcceptEncoding: true
  })
  // Varnish compressing (do_gzip) whatever the Cache-Control, passed responses included.
  proxyConfigTests(t, 'varnish', {
    name: 'do_gzip',
    compressInApp: false,
    config: (p) => varnishConfig(p, DO_GZIP_VCL),
    table: {
      json: '200 gzip | wrong right right',
      'json without gzip': '200 identity | right right right',
      'json no-transform': '200 gzip | wrong right right',
      stream: '200 gzip | wrong right right',
      'stream no-transform': '200 gzip | wrong right right',
      file: '200 gzip | wrong right right',
      head: '200 gzip | wrong right right',
      'head file': '200 gzip | wrong right right',
      // Varnish answers a range of the stored gzip object with its gzip bytes, or the whole 200.
      range: ['206 gzip | wrong right right', '200 gzip | wrong right right'],
      'not modified': '304 gzip | wrong right right',
      upload: '201 gzip | wrong right right',
      'upload, wrong digest': '400 gzip | wrong right right',
      control: '200 gzip | wrong wrong wrong'
    },
    te: null,
    appTrailer: { h1: 'cut off', h2: ['absent', 'cut off'] },
    varyAcceptEncoding: true
  })
  // The recommended configuration: the app compresses, the VCL passes what Varnish would answer itself.
  proxyConfigTests(t, 'varnish', {
    name: 'recommended VCL, gzip in the app',
    compressInApp: true,
    config: (p) => varnishConfig(p, RECOMMENDED_VCL),
    table: {
      json: '200 gzip | right right right',
      'json without gzip': '200 identity | right right right',
      'json no-transform': '200 gzip | right right right',
      stream: '200 gzip | right right right',
      'stream no-transform': '200 gzip | right right right',
      file: '200 gzip | right right right',
      head: '200 identity | right right right',
      'head file': '200 identity | right right right',
      range: '206 identity | right right right',
      'not modified': '304 identity | absent absent absent',
      upload: '201 identity | right right right',
      'upload, wrong digest': '400 identity | right right right',
      control: '200 gzip | wrong wrong wrong'
    },
    te: null,
    appTrailer: { h1: ['cut off', 'absent'], h2: ['absent', 'cut off'] },
    varyAcceptEncoding: true
  })
})
