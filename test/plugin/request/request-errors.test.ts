// An error a handler throws after reading a body that failed or was cut
// off: when it carries no status of its own (the reader's own account of
// the failure, as @fastify/multipart 9's bare ERR_STREAM_PREMATURE_CLOSE),
// the plugin's onError hook gives it the failure's 4xx, so fastify's
// error handler does not log a client's bad body as a server error. An error
// with a status of its own, or one thrown for a body that did not fail, is
// left to fastify. Over HTTP/1.1 and HTTP/2, with the server's error log.
import { test } from 'tap'
import { pipeline } from 'node:stream/promises'
import type { FastifyInstance } from 'fastify'
import { sf } from './request-helpers'
import { assertProblem, failOnCrash, firstEnded, pieces, serve, serverErrors, sink, TRANSPORTS } from './upload-helpers'

const BODY = Buffer.alloc(64 * 1024, 'a')

/** Routes that read request.raw and throw, in place of the read's error, `make()`'s; `failed` is told of each. */
function routes (reads: string[], failed: () => void = () => {}) {
  return (app: FastifyInstance): void => {
    const rethrow = (make: () => Error) => async (request: { raw: NodeJS.ReadableStream }) => {
      try {
        await pipeline(request.raw, sink())
      } catch (err) {
        reads.push((err as { code?: string }).code ?? 'no code')
        failed()
        throw make()
      }
      return { read: true }
    }
    app.post('/bare', rethrow(() => new Error('the read failed')))
    app.post('/own-status', rethrow(() => Object.assign(new Error('upstream down'), { status: 503 })))
    app.post('/broken', async () => { throw new Error('a bug, not the body') })
  }
}

for (const transport of TRANSPORTS) {
  test(`${transport}: a bare error thrown for a body that failed its check takes the failure's 400, and is not logged as a server error`, { timeout: 15000 }, async (t) => {
    failOnCrash(t)
    const reads: string[] = []
    const served = await serve(t, transport, {}, routes(reads))
    const res = await served.send({ path: '/bare', headers: { 'content-type': 'application/x-raw', 'content-digest': sf('another body') }, body: pieces(BODY, 4) })
    assertProblem(t, res, 'FST_DIGEST_MISMATCH')
    t.same(reads, ['FST_DIGEST_MISMATCH'], 'the handler saw the failure')
    t.same(serverErrors(served.logs), [], 'no server error logged')
  })

  test(`${transport}: an error with a status of its own keeps it; an error for a body that did not fail stays a 500`, { timeout: 15000 }, async (t) => {
    failOnCrash(t)
    const reads: string[] = []
    const served = await serve(t, transport, {}, routes(reads))
    const own = await served.send({ path: '/own-status', headers: { 'content-type': 'application/x-raw', 'content-digest': sf('another body') }, body: pieces(BODY, 4) })
    assertProblem(t, own, 'FST_DIGEST_MISMATCH') // the body failed: the answer is the problem
    t.same(serverErrors(served.logs).map((line) => (line.res as { statusCode: number }).statusCode), [503], 'logged with its own status')
    served.logs.length = 0
    const broken = await served.send({ path: '/broken', headers: { 'content-type': 'application/x-raw', 'content-digest': sf(BODY) }, body: pieces(BODY, 4) })
    t.equal(broken.status, 500)
    t.same(serverErrors(served.logs).map((line) => line.msg), ['a bug, not the body'], 'a server error is still one')
  })
}

test('h1: a bare error thrown for an upload the client cut off takes 400, and is not logged as a server error', { timeout: 15000 }, async (t) => {
  failOnCrash(t)
  const reads: string[] = []
  let readFailed = (): void => {}
  const failedRead = new Promise<void>((resolve) => { readFailed = resolve })
  const served = await serve(t, 'h1', {}, routes(reads, readFailed), 'info')
  const res = await served.send({
    path: '/bare',
    headers: { 'content-type': 'application/x-raw', 'content-length': String(BODY.length * 2), 'content-digest': sf(BODY) },
    body: pieces(BODY, 4),
    delay: 20,
    cancelAfter: 2
  })
  t.equal(res.status, 0, 'no response on a destroyed socket')
  await failedRead
  t.equal(reads.length, 1, `the handler's read rejected (${reads.join()})`)
  const ended = await firstEnded(served)
  t.equal((ended.res as { statusCode: number }).statusCode, 400, `the error handler's answer (${String(ended.msg)})`)
  t.same(serverErrors(served.logs), [], 'no server error logged')
})
