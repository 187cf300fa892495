// nginx proxy_cache in front of the plugin (Debian's nginx 1.22): the Want-* fields in Vary keep one
// client's digests from another, the 406 of a stale Repr-Digest is never stored, HEAD shares the GET's
// entry. Controls: a cache that ignores Vary, or the 406's Cache-Control, is caught by the same checks.
import t from 'tap'
import { Agent, request } from 'undici'
import { digestInterceptor } from '../../lib/client/index'
import { sf } from '../helpers'
import { nginxPreamble, nginxTempPaths, proxySkip, startProxy, type ProxyPlace, type RunningProxy } from './proxy-harness'
import {
  JSON_BODY, STALE, askInTurn, cacheCases, h1, h2c, startOrigin,
  type Client, type Origin, type Received, type Via
} from './cache-checks'

/** proxy_cache with nginx's defaults (the key is the URL; Vary and Cache-Control honoured), plus `extra`. */
function config (extra = ''): (place: ProxyPlace) => string {
  return (p) => `${nginxPreamble(p.dir)}
http {
  access_log off;
  ${nginxTempPaths(p.dir)}
  proxy_cache_path ${p.dir}/cache keys_zone=digests:1m;
  server {
    listen 127.0.0.1:${p.port};
    listen 127.0.0.1:${p.h2port} http2;
    location / {
      proxy_pass http://127.0.0.1:${p.upstream};
      proxy_http_version 1.1;
      proxy_cache digests;
      ${extra}
      add_header X-Cache $upstream_cache_status always;
    }
  }
}
`
}

const hit = (res: Received): boolean => res.headers['x-cache'] === 'HIT'

function vias (origin: Origin, proxy: RunningProxy): Array<[string, Via]> {
  const clients: Array<[string, Client, string]> = [['HTTP/1.1', h1, proxy.origin], ['h2c', h2c, proxy.h2origin]]
  return clients.map(([name, client, base]) => [name, { origin, base, client, hit }])
}

t.test('nginx proxy_cache', { skip: proxySkip('nginx') }, async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, 'nginx', origin.port, config())
  for (const [name, via] of vias(origin, proxy)) {
    cacheCases(t, via, name)
  }
})

// Controls: the same checks catch a cache that keys by URL alone, and one that stores what the app said not to.
t.test('nginx controls', { skip: proxySkip('nginx') }, async (t) => {
  const origin = await startOrigin(t)
  t.test('proxy_ignore_headers Vary: the sha-512 client gets the stored sha-256 digest', async (t) => {
    const proxy = await startProxy(t, 'nginx', origin.port, config('proxy_ignore_headers Vary;'))
    const via: Via = { origin, base: proxy.origin, client: h1, hit }
    const got = await askInTurn(via, '/json?control=vary', 'want-content-digest', JSON_BODY)
    t.same(got.map(({ problems }) => problems), [[], ['content-digest in sha-256 instead of sha-512'], [], ['content-digest in sha-256 instead of sha-512']],
      'the checker reports the other client\'s algorithm')
    t.same(got.map(({ res }) => hit(res)), [false, true, true, true], 'served from the cache')
  })
  t.test('a 406 with the route\'s public, max-age=60 is stored and served again', async (t) => {
    const proxy = await startProxy(t, 'nginx', origin.port, config())
    const got = [await h1(proxy.origin, '/own-406'), await h1(proxy.origin, '/own-406')]
    t.same(got.map((res) => [res.status, hit(res)]), [[406, false], [406, true]], 'nginx honours the explicit freshness of a 406')
  })
  t.test('proxy_ignore_headers Cache-Control with proxy_cache_valid any: the 406 is served to a plain GET', async (t) => {
    const proxy = await startProxy(t, 'nginx', origin.port, config('proxy_ignore_headers Cache-Control Expires; proxy_cache_valid any 1m;'))
    const refused = await h1(proxy.origin, '/json?control=406', { 'repr-digest': STALE })
    t.equal(refused.status, 406)
    const plain = await h1(proxy.origin, '/json?control=406')
    t.equal(plain.status, 406, 'the stored 406 answers a request without Repr-Digest')
    t.ok(hit(plain), 'from the cache')
  })
  t.test('proxy_ignore_headers Vary with the Want-* fields in proxy_cache_key: each client its own again', async (t) => {
    const key = '"$scheme$proxy_host$request_uri|$http_want_content_digest|$http_want_repr_digest|$http_want_unencoded_digest"'
    const proxy = await startProxy(t, 'nginx', origin.port, config(`proxy_ignore_headers Vary; proxy_cache_key ${key};`))
    const via: Via = { origin, base: proxy.origin, client: h1, hit }
    const got = await askInTurn(via, '/json?control=key', 'want-content-digest', JSON_BODY)
    t.same(got.map(({ problems }) => problems), [[], [], [], []], 'the algorithm asked for, valid for the bytes')
    t.same(got.map(({ res }) => hit(res)), [false, false, true, true], 'the repeats from the cache')
  })
  t.test('proxy_no_cache and proxy_cache_bypass on Repr-Digest: the 406 stays out though Cache-Control is ignored', async (t) => {
    const proxy = await startProxy(t, 'nginx', origin.port, config('proxy_ignore_headers Cache-Control Expires; proxy_cache_valid any 1m; ' +
      'proxy_no_cache $http_repr_digest; proxy_cache_bypass $http_repr_digest;'))
    const stale = { 'repr-digest': STALE }
    const got = [await h1(proxy.origin, '/json?control=bypass', stale), await h1(proxy.origin, '/json?control=bypass'),
      await h1(proxy.origin, '/json?control=bypass'), await h1(proxy.origin, '/json?control=bypass', stale)]
    t.same(got.map((res) => res.status), [406, 200, 200, 406], 'each stale Repr-Digest gets the app\'s 406, the others the 200')
    t.same(got.map((res) => res.headers['x-cache']), ['BYPASS', 'MISS', 'HIT', 'BYPASS'], 'the 200 stored, the conditional requests never answered by the cache')
  })
  // RFC 9110 §9.3.2: a HEAD may carry the GET's fields; the cache answers it with the stored GET's Content-Digest.
  t.test('fastify-digest-fields/client and a HEAD answered from a stored GET', async (t) => {
    const proxy = await startProxy(t, 'nginx', origin.port, config())
    const dispatcher = new Agent().compose(digestInterceptor({ want: 'sha-256' }))
    t.teardown(() => dispatcher.close())
    const get = await request(`${proxy.origin}/json?control=head-client`, { dispatcher })
    t.equal(await get.body.text(), JSON_BODY, 'the GET is checked and passes')
    const head = await request(`${proxy.origin}/json?control=head-client`, { method: 'HEAD', dispatcher })
    t.equal(head.headers['content-digest'], sf(JSON_BODY), 'the HEAD carries the stored GET\'s Content-Digest')
    t.equal(await head.body.text(), '', 'and passes: not the empty content\'s, it is left unchecked')
    const required = new Agent().compose(digestInterceptor({ want: 'sha-256', verify: 'required' }))
    t.teardown(() => required.close())
    const strict = request(`${proxy.origin}/json?control=head-client`, { method: 'HEAD', dispatcher: required }).then(async (res) => await res.body.text())
    await t.rejects(strict, { code: 'FST_DIGEST_RESPONSE_UNCHECKED' }, 'under verify: \'required\' an unchecked digest is not enough')
  })
})
