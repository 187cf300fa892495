import { test } from 'tap'
import fc from 'fast-check'
import { editDistance, unknownKey } from '../../lib/core/option-checks'

/** The option unknownKey suggests for `key`, if any. */
const nearestKey = (key: string, keys: string[]): string | undefined => /did you mean "(.*)"\?$/.exec(unknownKey(key, keys))?.[1]

test('editDistance: insertions, deletions, substitutions and adjacent swaps cost 1', async (t) => {
  const cases: Array<[string, string, number]> = [
    ['', '', 0],
    ['', 'abc', 3],
    ['abc', '', 3],
    ['verify', 'verify', 0],
    ['verfy', 'verify', 1],
    ['verifyy', 'verify', 1],
    ['verity', 'verify', 1],
    ['verfiy', 'verify', 1],
    ['ab', 'ba', 1],
    ['ca', 'abc', 3], // optimal string alignment: the swapped pair is not edited again
    ['kitten', 'sitting', 3],
    ['algorithm', 'algorithms', 1],
    ['flaw', 'lawn', 2],
    ['saturday', 'sunday', 3]
  ]
  for (const [a, b, distance] of cases) {
    t.equal(editDistance(a, b), distance, `${a} → ${b}`)
    t.equal(editDistance(b, a), distance, `${b} → ${a}`)
  }
})

test('editDistance is a distance bounded by the lengths', async (t) => {
  const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd'), maxLength: 8 })
  fc.assert(fc.property(word, word, (a, b) => {
    const d = editDistance(a, b)
    if (d !== editDistance(b, a)) throw new Error('not symmetric')
    if ((d === 0) !== (a === b)) throw new Error('zero only for equal strings')
    if (d < Math.abs(a.length - b.length) || d > Math.max(a.length, b.length)) throw new Error(`out of bounds: ${d}`)
    // one more character costs at most one more edit
    if (editDistance(a + 'x', b) > d + 1) throw new Error('not a distance')
  }), { seed: 9530, numRuns: 500 })
  t.pass()
})

test('unknownKey: the nearest candidate within a third of the length, ignoring case; ties to the first', async (t) => {
  const keys = ['contentDigest', 'reprDigest', 'verify', 'trailers']
  t.equal(nearestKey('verfy', keys), 'verify')
  t.equal(nearestKey('VERIFY', keys), 'verify', 'case only')
  t.equal(nearestKey('content-digest', keys), 'contentDigest')
  t.equal(nearestKey('reprdigests', keys), 'reprDigest')
  t.equal(nearestKey('x', keys), undefined, 'nothing near')
  t.equal(nearestKey('digest', keys), undefined, 'a shared part is not enough')
  t.equal(nearestKey('ab', ['ac', 'ad']), 'ac', 'a tie goes to the first candidate')
  t.equal(nearestKey('ab', ['xy', 'ad', 'ac']), 'ad')
  t.equal(nearestKey('a', ['b']), 'b', 'one edit is always near enough')
  t.equal(nearestKey('anything', []), undefined)
  t.equal(unknownKey('xyz', ['abc', 'def'], 'route options'), 'unknown option (route options: abc, def)')
})
