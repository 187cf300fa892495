import { test } from 'tap'
import { selectAlgorithms, wantAdvertisement } from '../../lib/core/negotiation'
import type { DigestAlgorithm, SelectionInput } from '../../types/index'

const BOTH: readonly DigestAlgorithm[] = ['sha-256', 'sha-512']

function want (entries: Record<string, number>): Map<string, number> {
  return new Map(Object.entries(entries))
}

const TABLE: Array<[string, SelectionInput, DigestAlgorithm[]]> = [
  // nothing asked, nothing configured
  ['no want, no unsolicited', { algorithms: BOTH }, []],
  ['null want, no unsolicited', { algorithms: BOTH, want: null }, []],
  ['no want, empty unsolicited', { algorithms: BOTH, unsolicited: [] }, []],
  ['no algorithms enabled', { algorithms: [], want: want({ 'sha-256': 10 }), unsolicited: ['sha-256'] }, []],
  // (1) the field's own Want-*
  ['want picks the highest weight', { algorithms: BOTH, want: want({ 'sha-256': 2, 'sha-512': 5 }) }, ['sha-512']],
  ['RFC 9530 §4 example', { algorithms: BOTH, want: want({ 'sha-512': 3, 'sha-256': 10, unixsum: 0 }) }, ['sha-256']],
  ['ties go to server order', { algorithms: BOTH, want: want({ 'sha-512': 3, 'sha-256': 3 }) }, ['sha-256']],
  ['ties go to server order (reversed)', { algorithms: ['sha-512', 'sha-256'], want: want({ 'sha-256': 3, 'sha-512': 3 }) }, ['sha-512']],
  ['weight 1 is enough', { algorithms: BOTH, want: want({ 'sha-512': 1 }) }, ['sha-512']],
  ['want replaces the unsolicited default', { algorithms: BOTH, want: want({ 'sha-512': 1 }), unsolicited: ['sha-256'] }, ['sha-512']],
  ['want alone, not unsolicited: one algorithm', { algorithms: BOTH, want: want({ 'sha-256': 9, 'sha-512': 8 }) }, ['sha-256']],
  // weight 0 removes a candidate
  ['weight 0 refuses the only unsolicited algorithm: the first candidate instead', {
    algorithms: BOTH, want: want({ 'sha-256': 0 }), unsolicited: ['sha-256']
  }, ['sha-512']],
  ['the fallback is one algorithm, the first candidate in server order', {
    algorithms: ['sha-512', 'sha-256', 'md5'], want: want({ 'sha-256': 0 }), unsolicited: ['sha-256']
  }, ['sha-512']],
  ['every unsolicited algorithm refused: the first candidate', {
    algorithms: ['sha-256', 'sha-512', 'md5'], want: want({ 'sha-256': 0, 'sha-512': 0 }), unsolicited: ['sha-256', 'sha-512']
  }, ['md5']],
  ['weight 0 excludes one of two unsolicited', {
    algorithms: BOTH, want: want({ 'sha-256': 0 }), unsolicited: ['sha-256', 'sha-512']
  }, ['sha-512']],
  ['everything weighted 0', { algorithms: BOTH, want: want({ 'sha-256': 0, 'sha-512': 0 }), unsolicited: BOTH }, []],
  ['negative weight (not from the parser) is neither wanted nor excluding', {
    algorithms: BOTH, want: want({ 'sha-512': -1 }), unsolicited: ['sha-512']
  }, ['sha-512']],
  // deprecated algorithms only when enabled
  ['deprecated wanted but not enabled: nothing', { algorithms: BOTH, want: want({ md5: 10 }) }, []],
  ['deprecated wanted but not enabled: unsolicited default', { algorithms: BOTH, want: want({ md5: 10 }), unsolicited: ['sha-256'] }, ['sha-256']],
  ['deprecated wanted and enabled', { algorithms: ['sha-256', 'md5'], want: want({ md5: 10, 'sha-256': 1 }) }, ['md5']],
  ['deprecated enabled, unixsum=0 excludes it', {
    algorithms: ['unixsum', 'sha-256'], want: want({ unixsum: 0 }), unsolicited: ['unixsum', 'sha-256']
  }, ['sha-256']],
  ['unsolicited algorithm that is not enabled is dropped', { algorithms: BOTH, unsolicited: ['md5'] }, []],
  ['unsolicited algorithm not enabled, another refused: nothing to fall back from', {
    algorithms: BOTH, want: want({ 'sha-256': 0 }), unsolicited: ['md5']
  }, []],
  // unknown keys
  ['unknown-only want: falls to unsolicited', { algorithms: BOTH, want: want({ foo: 10 }), unsolicited: ['sha-512'] }, ['sha-512']],
  ['unknown-only want: nothing', { algorithms: BOTH, want: want({ foo: 10 }) }, []],
  ['unknown key with the top weight is skipped', { algorithms: BOTH, want: want({ foo: 10, 'sha-512': 2 }) }, ['sha-512']],
  ['empty want map', { algorithms: BOTH, want: new Map(), unsolicited: ['sha-256'] }, ['sha-256']],
  // (2) unsolicited
  ['unsolicited default', { algorithms: BOTH, unsolicited: ['sha-256'] }, ['sha-256']],
  ['unsolicited several, in server order', { algorithms: BOTH, unsolicited: ['sha-512', 'sha-256'] }, ['sha-256', 'sha-512']],
  ['null want: unsolicited', { algorithms: BOTH, want: null, unsolicited: ['sha-256'] }, ['sha-256']]
]

test('selectAlgorithms: table', async (t) => {
  for (const [name, input, expected] of TABLE) {
    t.same(selectAlgorithms(input), expected, name)
  }
})

test('selectAlgorithms does not modify its input', async (t) => {
  const algorithms: DigestAlgorithm[] = ['sha-256', 'sha-512']
  const unsolicited: DigestAlgorithm[] = ['sha-512', 'sha-256']
  const result = selectAlgorithms({ algorithms, want: want({ 'sha-256': 0 }), unsolicited })
  t.same(result, ['sha-512'])
  t.same(algorithms, ['sha-256', 'sha-512'])
  t.same(unsolicited, ['sha-512', 'sha-256'])
  t.not(selectAlgorithms({ algorithms, unsolicited: algorithms }), algorithms, 'a new array')
})

test('wantAdvertisement', async (t) => {
  t.equal(wantAdvertisement(BOTH), 'sha-256=10, sha-512=9')
  t.equal(wantAdvertisement(['sha-512']), 'sha-512=10')
  t.equal(wantAdvertisement([]), '')
  t.equal(wantAdvertisement(['sha-256', 'sha-512', 'md5', 'sha', 'unixsum', 'unixcksum', 'adler', 'crc32c']),
    'sha-256=10, sha-512=9, md5=8, sha=7, unixsum=6, unixcksum=5, adler=4, crc32c=3')
  const twelve = Array.from({ length: 12 }, (): DigestAlgorithm => 'sha-256')
  t.match(wantAdvertisement(twelve), /sha-256=2, sha-256=1, sha-256=1, sha-256=1$/, 'never below 1')
})
