// The request's phase (lib/plugin/request/phase.ts): the moves advance() makes and
// the ones it ignores, and what the verdict leaves.
import { test } from 'tap'
import { normalizeOptions } from '../../../lib/plugin/options'
import { advance, conclude, createState, isSettled, type Phase, type RequestState } from '../../../lib/plugin/request/phase'
import { blankFailure } from '../../../lib/core/judgement'
import { FST_DIGEST_MISSING } from '../../../lib/core/errors'

const PHASES: readonly Phase[] = ['tapping', 'routed', 'validated', 'checked', 'answered']

function at (phase: Phase): RequestState {
  const state = createState(normalizeOptions(), [], null, '', [], null, 1024)
  state.phase = phase
  return state
}

test('a new state is tapping, with nothing held, waiting or judged', async (t) => {
  const state = createState(normalizeOptions(), [], 'gzip', 'Repr-Digest', ['sha-256'], null, 1024)
  t.equal(state.phase, 'tapping')
  t.equal(state.heldEnd, null)
  t.equal(state.waitingReply, null)
  t.equal(state.failure, null)
  t.equal(state.tail, null)
  t.equal(state.decodeHere, false)
  t.equal(state.coding, 'gzip')
  t.same(state.decodedAlgorithms, ['sha-256'])
  t.equal(state.limit, 1024)
})

test('advance: the moves of the diagram, and no other', async (t) => {
  const allowed: Record<Phase, readonly Phase[]> = {
    tapping: ['routed', 'checked'],
    routed: ['validated', 'checked', 'answered'],
    validated: ['checked', 'answered'],
    checked: ['answered'],
    answered: []
  }
  for (const from of PHASES) {
    for (const to of PHASES) {
      const state = at(from)
      advance(state, to)
      const moves = allowed[from].includes(to)
      t.equal(state.phase, moves ? to : from, `${from} -> ${to}: ${moves ? 'moves' : 'stays'}`)
    }
  }
})

test('advance: preValidation after the verdict, and a reply waiting before the route was reached, change nothing', async (t) => {
  const checked = at('checked')
  advance(checked, 'validated')
  t.equal(checked.phase, 'checked')
  const tapping = at('tapping')
  advance(tapping, 'validated')
  t.equal(tapping.phase, 'tapping')
})

test('isSettled: checked and answered only', async (t) => {
  t.same(PHASES.filter((phase) => isSettled(at(phase))), ['checked', 'answered'])
})

test('conclude: the verdict, and the waiting reply handed over once', async (t) => {
  const params = normalizeOptions()
  const state = at('validated')
  let woken = 0
  const reply = (): void => { woken++ }
  state.waitingReply = reply
  const failure = blankFailure(params, new FST_DIGEST_MISSING())
  t.equal(conclude(state, failure), reply)
  t.equal(state.phase, 'checked')
  t.equal(state.failure, failure)
  t.equal(state.waitingReply, null)
  t.equal(woken, 0, 'the caller wakes it')
  const again = at('routed')
  t.equal(conclude(again, null), null, 'nobody waiting')
  t.equal(again.phase, 'checked')
  t.equal(again.failure, null)
})
