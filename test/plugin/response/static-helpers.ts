// A temporary directory served by the real @fastify/static, with staticHeaders as its setHeaders, for the tests of
// static files: a fresh Fastify per test (buildApp), answering through inject.
import { readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import compress from '@fastify/compress'
import fastifyStatic, { type FastifyStaticOptions } from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import type { DigestOmission, FastifyDigestFieldsOptions } from '../../../types/index'
import digestFields = require('../../../lib/index')
import { buildApp } from '../../helpers'

interface Closeable { teardown (fn: () => unknown): void }

export interface StaticSetup {
  /** Plugin options (default: Content-Digest and Repr-Digest). */
  digest?: FastifyDigestFieldsOptions
  /** @fastify/static options besides root. */
  static?: Partial<FastifyStaticOptions>
  /** Pass staticHeaders as setHeaders (default true). */
  headers?: boolean
  /** Register @fastify/compress before or after the digest plugin. */
  compress?: 'compress-first' | 'digest-first'
  /** Log at this level into `logs` (default: no logger, no lines). */
  logLevel?: 'debug' | 'warn'
}

export interface StaticSite {
  app: FastifyInstance
  dir: string
  /** The log lines, with `logLevel`. */
  logs: string[]
  /** reply.digestsOmitted of each response, in order. */
  omitted: Array<DigestOmission | null>
  /** The file as it is on disk now. */
  disk (name: string): Buffer
  write (name: string, content: Buffer | string): void
}

/** `files` written to a temporary directory (removed at teardown) that @fastify/static serves at `/`. */
export async function staticSite (
  t: Closeable, files: Record<string, Buffer | string>, setup: StaticSetup = {}
): Promise<StaticSite> {
  const dir = await mkdtemp(join(tmpdir(), 'digest-static-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const write = (name: string, content: Buffer | string): void => writeFileSync(join(dir, name), content)
  for (const [name, content] of Object.entries(files)) write(name, content)
  const compressOpts = { threshold: 1 }
  const logs: string[] = []
  const level = setup.logLevel
  const stream = { write: (line: string) => { logs.push(line) } }
  const serverOpts = level === undefined ? {} : { logger: { level, stream } }
  const app = await buildApp(t, setup.digest ?? { contentDigest: true, reprDigest: true }, serverOpts, async (app) => {
    if (setup.compress === 'compress-first') await app.register(compress, compressOpts)
  })
  if (setup.compress === 'digest-first') await app.register(compress, compressOpts)
  const omitted: Array<DigestOmission | null> = []
  app.addHook('onResponse', async (_request, reply) => { omitted.push(reply.digestsOmitted) })
  await app.register(fastifyStatic, {
    root: dir,
    ...(setup.headers === false ? {} : { setHeaders: digestFields.staticHeaders }),
    ...setup.static
  })
  return { app, dir, logs, omitted, write, disk: (name) => readFileSync(join(dir, name)) }
}
