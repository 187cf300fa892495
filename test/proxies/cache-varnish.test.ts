// Varnish (7.1, HTTP/1.1 and h2c on one port) in front of the plugin: the Want-* fields in Vary keep one
// client's digests from another, the 406 of a stale Repr-Digest is never stored (with the builtin VCL,
// and with a VCL giving every response a TTL), HEAD shares the GET's object. Controls: a VCL that drops
// Vary, or stores whatever the app says, is caught by the same checks.
import t from 'tap'
import { proxySkip, startProxy, type ProxyPlace } from './proxy-harness'
import {
  JSON_BODY, STALE, askInTurn, cacheCases, h1, h2c, startOrigin,
  type Client, type Received, type Via
} from './cache-checks'

/** The builtin VCL (Varnish's defaults: the URL as key, Vary and Cache-Control honoured), after `backendResponse`. */
function vcl (backendResponse = '', subs = ''): (place: ProxyPlace) => string {
  return (p) => `vcl 4.1;
backend default { .host = "127.0.0.1"; .port = "${p.upstream}"; }
sub vcl_backend_response { ${backendResponse} }
${subs}
`
}

/** A hit carries two X-Varnish ids, this request's and the one that stored the object (and an Age). */
const hit = (res: Received): boolean => (res.headers['x-varnish'] ?? '').split(' ').length === 2 && res.headers.age !== undefined

const CLIENTS: Array<[string, Client]> = [['HTTP/1.1', h1], ['h2c', h2c]]

// "Every response cached for a minute": a common VCL; the builtin vcl_backend_response still runs after it.
const CONFIGS: Array<[string, string]> = [['builtin VCL', ''], ['beresp.ttl = 60s for every response', 'set beresp.ttl = 60s;']]

for (const [label, backendResponse] of CONFIGS) {
  t.test(`Varnish, ${label}`, { skip: proxySkip('varnish') }, async (t) => {
    const origin = await startOrigin(t)
    const proxy = await startProxy(t, 'varnish', origin.port, vcl(backendResponse))
    for (const [name, client] of CLIENTS) {
      const via: Via = { origin, base: proxy.origin, client, hit }
      cacheCases(t, via, name)
    }
  })
}

// Controls: the same checks catch a cache that keys by URL alone, and one that stores what the app said not to.
t.test('Varnish controls', { skip: proxySkip('varnish') }, async (t) => {
  const origin = await startOrigin(t)
  t.test('unset beresp.http.Vary: the sha-512 client gets the stored sha-256 digest', async (t) => {
    const proxy = await startProxy(t, 'varnish', origin.port, vcl('unset beresp.http.Vary;'))
    const via: Via = { origin, base: proxy.origin, client: h1, hit }
    const got = await askInTurn(via, '/json?control=vary', 'want-content-digest', JSON_BODY)
    t.same(got.map(({ problems }) => problems), [[], ['content-digest in sha-256 instead of sha-512'], [], ['content-digest in sha-256 instead of sha-512']],
      'the checker reports the other client\'s algorithm')
    t.same(got.map(({ res }) => hit(res)), [false, true, true, true], 'served from the cache')
  })
  t.test('a 406 with the route\'s public, max-age=60: not stored by the builtin VCL, stored with beresp.ttl = 60s', async (t) => {
    for (const [backendResponse, stored] of [['', false], ['set beresp.ttl = 60s;', true]] as const) {
      const proxy = await startProxy(t, 'varnish', origin.port, vcl(backendResponse))
      const got = [await h1(proxy.origin, '/own-406'), await h1(proxy.origin, '/own-406')]
      t.same(got.map((res) => [res.status, hit(res)]), [[406, false], [406, stored]], `${backendResponse === '' ? 'builtin VCL' : backendResponse}`)
    }
  })
  t.test('beresp.ttl = 60s and return (deliver), past the builtin VCL: the 406 is served to a plain GET', async (t) => {
    const proxy = await startProxy(t, 'varnish', origin.port, vcl('set beresp.ttl = 60s; return (deliver);'))
    const refused = await h1(proxy.origin, '/json?control=406', { 'repr-digest': STALE })
    t.equal(refused.status, 406)
    const plain = await h1(proxy.origin, '/json?control=406')
    t.equal(plain.status, 406, 'the stored 406 answers a request without Repr-Digest')
    t.ok(hit(plain), 'from the cache')
  })
  t.test('unset beresp.http.Vary with the Want-* fields in vcl_hash: each client its own again', async (t) => {
    const hash = 'sub vcl_hash { hash_data(req.http.Want-Content-Digest); hash_data(req.http.Want-Repr-Digest); hash_data(req.http.Want-Unencoded-Digest); }'
    const proxy = await startProxy(t, 'varnish', origin.port, vcl('unset beresp.http.Vary;', hash))
    const via: Via = { origin, base: proxy.origin, client: h1, hit }
    const got = await askInTurn(via, '/json?control=hash', 'want-content-digest', JSON_BODY)
    t.same(got.map(({ problems }) => problems), [[], [], [], []], 'the algorithm asked for, valid for the bytes')
    t.same(got.map(({ res }) => hit(res)), [false, false, true, true], 'the repeats from the cache')
  })
  t.test('return (pass) for a request with Repr-Digest: the 406 stays out though the VCL stores everything', async (t) => {
    const pass = 'sub vcl_recv { if (req.http.Repr-Digest) { return (pass); } }'
    const proxy = await startProxy(t, 'varnish', origin.port, vcl('set beresp.ttl = 60s; return (deliver);', pass))
    const stale = { 'repr-digest': STALE }
    const got = [await h1(proxy.origin, '/json?control=pass', stale), await h1(proxy.origin, '/json?control=pass'),
      await h1(proxy.origin, '/json?control=pass'), await h1(proxy.origin, '/json?control=pass', stale)]
    t.same(got.map((res) => res.status), [406, 200, 200, 406], 'each stale Repr-Digest gets the app\'s 406, the others the 200')
    t.same(got.map(hit), [false, false, true, false], 'the 200 stored, the conditional requests never answered by the cache')
  })
})
