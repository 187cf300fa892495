// The plugin's client (fastify-digest-fields/client) behind real proxies: through nginx's gzip
// and Caddy's encode, which compress the app's identity response and forward its Content-Digest,
// the client fails with FST_DIGEST_RESPONSE_REENCODED naming the end-to-end fields that matched;
// acceptReencoded passes it; where the proxy leaves the app's bytes alone (nginx with gzip off,
// HAProxy honouring the plugin's no-transform) every field verifies. Control: a route whose
// fields describe other bytes fails as a mismatch through each, not as a re-encoding.
import t from 'tap'
import { gunzipSync } from 'node:zlib'
import { proxySkip, startProxy, type ProxyKind, type ProxyPlace } from './proxy-harness'
import { caddyConfig, haproxyConfig, nginxConfig } from './proxy-configs'
import { JSON_BODY, deploymentApp } from './deployment-checks'
import { call, digestAgent, type Kind } from '../client/client-helpers'
import type { DigestInterceptorOptions } from '../../types/client'

interface Setup { name: string, kind: ProxyKind, config: (place: ProxyPlace) => string, recodes: boolean }

const NGINX_GZIP = 'gzip on; gzip_proxied any; gzip_types application/json;'
const HAPROXY_GZIP = 'compression algo gzip\n  compression type application/json'

const SETUPS: Setup[] = [
  { name: 'nginx, gzip on', kind: 'nginx', config: (p) => nginxConfig(p, NGINX_GZIP), recodes: true },
  { name: 'Caddy, encode gzip', kind: 'caddy', config: (p) => caddyConfig(p, 'encode gzip'), recodes: true },
  { name: 'nginx, gzip off', kind: 'nginx', config: (p) => nginxConfig(p, 'gzip off;'), recodes: false },
  { name: 'HAProxy compressing, the plugin\'s no-transform', kind: 'haproxy', config: (p) => haproxyConfig(p, HAPROXY_GZIP), recodes: false }
]

const KINDS: Kind[] = ['request', 'fetch']
const GZIP = { 'accept-encoding': 'gzip' }

for (const setup of SETUPS) {
  t.test(setup.name, { skip: proxySkip(setup.kind) }, async (t) => {
    const { port } = await deploymentApp(t, false)
    const proxy = await startProxy(t, setup.kind, port, setup.config)
    const url = `${proxy.origin}/json`
    const through = async (kind: Kind, opts: DigestInterceptorOptions, path = '/json'): ReturnType<typeof call> =>
      await call(kind, digestAgent(t, opts), `${proxy.origin}${path}`, { headers: GZIP })
    for (const kind of KINDS) {
      const plain = await through(kind, {})
      t.equal(plain.status, 200, `${kind}: ${url}`)
      if (setup.recodes) {
        t.equal(plain.headers['content-encoding'], 'gzip', `${kind}: the proxy compressed the app's identity body`)
        t.equal(plain.error?.code, 'FST_DIGEST_RESPONSE_REENCODED', `${kind}: ${String(plain.error?.message)}`)
        t.equal(plain.error?.field, 'Content-Digest')
        t.same((plain.error as { matched?: unknown } | null)?.matched, ['Repr-Digest', 'Unencoded-Digest'])
        const accepted = await through(kind, { acceptReencoded: true, verify: 'required' })
        t.equal(accepted.error, null, `${kind}: acceptReencoded passes it`)
        const body = kind === 'request' ? gunzipSync(accepted.body) : accepted.body
        t.ok(body.equals(JSON_BODY), `${kind}: the app's content`)
      } else {
        t.equal(plain.headers['content-encoding'], undefined, `${kind}: the app's identity bytes, not recompressed`)
        t.equal(plain.error, null, `${kind}: every field verified`)
        t.ok(plain.body.equals(JSON_BODY), `${kind}: the app's content`)
      }
      // The control route's fields (sent by hand) describe other bytes: a mismatch, re-encoded or not.
      const control = await through(kind, { acceptReencoded: true }, '/control')
      t.equal(control.error?.code, 'FST_DIGEST_RESPONSE_MISMATCH', `${kind}: the control fails as a mismatch`)
    }
  })
}
