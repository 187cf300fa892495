// SharedController: the handler above and the side decoder both may pause a
// response; it resumes only when neither holds it.
import { test } from 'tap'
import { SharedController } from '../../lib/client/handler'

function fake () {
  const calls: string[] = []
  const real = {
    aborted: false,
    reason: null,
    paused: false,
    rawHeaders: ['a', 'b'],
    rawTrailers: null,
    pause () { calls.push('pause') },
    resume () { calls.push('resume') },
    abort (reason: Error) { calls.push(`abort ${reason.message}`) }
  }
  return { real, calls }
}

test('resumed only when neither the handler above nor the decoder holds it', async (t) => {
  const { real, calls } = fake()
  const shared = new SharedController(real)
  shared.hold()
  shared.pause()
  t.equal(shared.paused, true)
  shared.resume()
  t.same(calls, ['pause', 'pause'], 'still held by the decoder')
  shared.pause()
  shared.release()
  t.same(calls, ['pause', 'pause', 'pause'], 'still paused by the handler above')
  shared.resume()
  t.same(calls.at(-1), 'resume')
  shared.release()
  t.equal(calls.length, 4, 'a release without a hold does nothing')
  shared.hold()
  shared.release()
  t.same(calls.slice(-2), ['pause', 'resume'])
})

test('the rest is the real controller\'s', async (t) => {
  const { real, calls } = fake()
  const shared = new SharedController(real)
  t.equal(shared.aborted, false)
  t.equal(shared.reason, null)
  t.same(shared.rawHeaders, ['a', 'b'])
  t.equal(shared.rawTrailers, null)
  shared.abort(new Error('stop'))
  t.same(calls, ['abort stop'])
})
