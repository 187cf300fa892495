import { test } from 'tap'
import { createHash } from 'node:crypto'
import { verifyDigests } from '../../lib/core/compare'
import type { AlgorithmOutcome, DigestAlgorithm } from '../../types/index'

const BODY = Buffer.from('{"hello": "world"}')
const SHA256 = createHash('sha256').update(BODY).digest()
const SHA512 = createHash('sha512').update(BODY).digest()
const MD5 = createHash('md5').update(BODY).digest()
const OTHER256 = createHash('sha256').update('other').digest()
const BOTH: readonly DigestAlgorithm[] = ['sha-256', 'sha-512']
// The table enables unixsum too, so an out-of-range Integer can be reported.
const TABLE_ENABLED: readonly DigestAlgorithm[] = ['sha-256', 'sha-512', 'unixsum']
const COMPUTED = new Map<DigestAlgorithm, Buffer>([['sha-256', SHA256], ['sha-512', SHA512], ['md5', MD5]])

type Row = [string, Array<[string, Buffer]>, boolean, Array<[string, AlgorithmOutcome]>]

const TABLE: Row[] = [
  ['sha-256 matched', [['sha-256', SHA256]], true, [['sha-256', 'matched']]],
  ['both matched', [['sha-256', SHA256], ['sha-512', SHA512]], true, [['sha-256', 'matched'], ['sha-512', 'matched']]],
  ['sha-256 mismatched', [['sha-256', OTHER256]], false, [['sha-256', 'mismatched']]],
  ['one bit off', [['sha-256', Buffer.from(SHA256.map((b, i) => i === 31 ? b ^ 1 : b))]], false, [['sha-256', 'mismatched']]],
  ['sha-256 too short', [['sha-256', SHA256.subarray(0, 31)]], false, [['sha-256', 'invalid-length']]],
  ['sha-512 with a sha-256 value', [['sha-512', SHA256]], false, [['sha-512', 'invalid-length']]],
  ['empty value', [['sha-256', Buffer.alloc(0)]], false, [['sha-256', 'invalid-length']]],
  ['unixsum out of range (8 octets from the parser)', [['unixsum', Buffer.alloc(8)]], false, [['unixsum', 'invalid-length']]],
  ['unknown algorithm only', [['foo', Buffer.from([1])]], false, [['foo', 'unsupported']]],
  ['known but not enabled (md5)', [['md5', MD5]], false, [['md5', 'unsupported']]],
  ['nothing received', [], false, []],
  ['matched + unsupported: ok', [['foo', Buffer.from([1])], ['sha-256', SHA256], ['md5', MD5]], true,
    [['foo', 'unsupported'], ['sha-256', 'matched'], ['md5', 'unsupported']]],
  ['matched + mismatched', [['sha-256', SHA256], ['sha-512', Buffer.alloc(64)]], false,
    [['sha-256', 'matched'], ['sha-512', 'mismatched']]],
  ['mismatched + matched (received order kept)', [['sha-512', Buffer.alloc(64)], ['sha-256', SHA256]], false,
    [['sha-512', 'mismatched'], ['sha-256', 'matched']]],
  ['matched + invalid-length', [['sha-256', SHA256], ['sha-512', SHA256]], false,
    [['sha-256', 'matched'], ['sha-512', 'invalid-length']]],
  ['invalid-length + unsupported', [['sha-256', Buffer.alloc(3)], ['foo', Buffer.alloc(32)]], false,
    [['sha-256', 'invalid-length'], ['foo', 'unsupported']]]
]

test('verifyDigests: table', async (t) => {
  for (const [name, received, ok, results] of TABLE) {
    const verification = verifyDigests('Content-Digest', new Map(received), COMPUTED, TABLE_ENABLED)
    t.same(verification, {
      field: 'Content-Digest',
      ok,
      results: results.map(([algorithm, outcome]) => ({ algorithm, outcome }))
    }, name)
  }
})

test('verifyDigests: field name, enabled deprecated algorithms', async (t) => {
  const verification = verifyDigests('Repr-Digest', new Map([['md5', MD5]]), COMPUTED, ['md5'])
  t.same(verification, { field: 'Repr-Digest', ok: true, results: [{ algorithm: 'md5', outcome: 'matched' }] })
  t.equal(verifyDigests('Digest', new Map([['sha-256', SHA256]]), COMPUTED, BOTH).field, 'Digest')
})

test('verifyDigests: members the caller computed nothing for are left out', async (t) => {
  const only256 = new Map<DigestAlgorithm, Buffer>([['sha-256', SHA256]])
  t.same(verifyDigests('Content-Digest', new Map([['sha-512', SHA512]]), only256, BOTH),
    { field: 'Content-Digest', ok: false, results: [] }, 'undecidable alone: not ok')
  t.same(verifyDigests('Content-Digest', new Map([['sha-512', SHA512], ['sha-256', SHA256]]), only256, BOTH),
    { field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] })
  t.same(verifyDigests('Content-Digest', new Map([['sha-512', Buffer.alloc(2)]]), only256, BOTH).results,
    [{ algorithm: 'sha-512', outcome: 'invalid-length' }], 'length is checked before the computed value')
})

test('verifyDigests: a computed value of the wrong length is a mismatch, not a throw', async (t) => {
  const bogus = new Map<DigestAlgorithm, Buffer>([['sha-256', Buffer.alloc(16)]])
  t.same(verifyDigests('Content-Digest', new Map([['sha-256', SHA256]]), bogus, BOTH),
    { field: 'Content-Digest', ok: false, results: [{ algorithm: 'sha-256', outcome: 'mismatched' }] })
})
