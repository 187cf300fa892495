// staticHeaders with the @fastify/static majors that pass different things to
// setHeaders: 10 passes the reply, 8 and 9 pass the raw response. Both, used
// directly or called from a setHeaders of the application's (README), give a
// HEAD and a 206 the whole file's Repr-Digest. @fastify/static 9 is installed
// under the alias `static9`.
import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Stats } from 'node:fs'
import static10 from '@fastify/static'
import static9 from 'static9'
import type { FastifyReply } from 'fastify'
import digestFields = require('../../../lib/index')
import { buildApp, sf, pattern, EMPTY_SHA256 } from '../../helpers'

const { staticHeaders } = digestFields
const FILE = pattern(5000)

type SetHeaders = (res: never, path: string, stat: Stats) => void

const VERSIONS: Array<{ name: string, plugin: unknown, own: SetHeaders }> = [
  {
    name: '@fastify/static 10',
    plugin: static10,
    own: ((reply: FastifyReply, path: string, stat: Stats) => {
      staticHeaders(reply, path, stat)
      reply.header('x-mine', '1')
    }) as SetHeaders
  },
  {
    name: '@fastify/static 9',
    plugin: static9,
    own: ((res: ServerResponse, path: string, stat: Stats) => {
      staticHeaders(res, path, stat)
      res.setHeader('x-mine', '1')
    }) as SetHeaders
  }
]

for (const { name, plugin, own } of VERSIONS) {
  test(`${name}: staticHeaders, as setHeaders or called from the application's, gives HEAD and 206 the whole file's Repr-Digest`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'digest-static-versions-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'file.bin'), FILE)
    for (const [label, setHeaders] of [['setHeaders: staticHeaders', staticHeaders], ['the application\'s setHeaders', own]] as const) {
      const app = await buildApp(t, { contentDigest: true, reprDigest: true })
      await app.register(plugin as typeof static10, { root: dir, setHeaders: setHeaders as never })
      const head = await app.inject({ method: 'HEAD', url: '/file.bin' })
      t.equal(head.statusCode, 200, `${label}: HEAD`)
      t.equal(head.headers['content-digest'], EMPTY_SHA256, `${label}: HEAD`)
      t.equal(head.headers['repr-digest'], sf(FILE), `${label}: HEAD carries the whole file's digest`)
      const part = await app.inject({ url: '/file.bin', headers: { range: 'bytes=100-199' } })
      t.equal(part.statusCode, 206, `${label}: range`)
      t.equal(part.headers['content-digest'], sf(FILE.subarray(100, 200)), `${label}: the part`)
      t.equal(part.headers['repr-digest'], sf(FILE), `${label}: the whole file`)
      t.equal(part.headers['x-mine'], setHeaders === own ? '1' : undefined, `${label}: the application's header`)
      await app.close()
    }
  })
}
