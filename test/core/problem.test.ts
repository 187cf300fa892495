// Problem details bodies (RFC 9457) for the digest problem types of
// draft-ietf-httpapi-digest-fields-problem-types-06.
import { test } from 'tap'
import {
  blankProblem,
  byteSequence,
  collectFailures,
  collectUnsupported,
  invalidReason,
  invalidValuesProblem,
  mismatchedValuesProblem,
  unsupportedAlgorithmsProblem,
  PROBLEM_CONTENT_TYPE,
  PROBLEM_TYPES
} from '../../lib/core/problem'

const IANA = 'https://iana.org/assignments/http-problem-types#'

test('type URIs and registered titles', async (t) => {
  t.equal(PROBLEM_CONTENT_TYPE, 'application/problem+json')
  t.same(PROBLEM_TYPES, {
    unsupported: { type: `${IANA}digest-unsupported-algorithms`, title: 'Unsupported Hashing Algorithms' },
    invalid: { type: `${IANA}digest-invalid-values`, title: 'Invalid Digest Values' },
    mismatched: { type: `${IANA}digest-mismatched-values`, title: 'Mismatched Digest Values' }
  })
  t.ok(Object.isFrozen(PROBLEM_TYPES) && Object.isFrozen(PROBLEM_TYPES.invalid))
})

test('the three draft problem types, with their extension members', async (t) => {
  t.same(unsupportedAlgorithmsProblem([{ algorithm: 'md5', header: 'Repr-Digest' }], 'C', 'd'), {
    type: `${IANA}digest-unsupported-algorithms`,
    title: 'Unsupported Hashing Algorithms',
    status: 400,
    detail: 'd',
    code: 'C',
    unsupported_algorithms: [{ algorithm: 'md5', header: 'Repr-Digest' }]
  })
  t.same(invalidValuesProblem([{ algorithm: 'sha-512', header: 'Repr-Digest', reason: 'r' }], 'C', 'd').invalid_digests,
    [{ algorithm: 'sha-512', header: 'Repr-Digest', reason: 'r' }])
  const mismatched = mismatchedValuesProblem([{ algorithm: 'sha-256', provided_digest: ':AA==:', header: 'Content-Digest' }], 'C', 'd')
  t.equal(mismatched.type, `${IANA}digest-mismatched-values`)
  t.same(mismatched.mismatched_digests, [{ algorithm: 'sha-256', provided_digest: ':AA==:', header: 'Content-Digest' }])
})

test('about:blank problems take the status phrase as title', async (t) => {
  t.same(blankProblem(400, 'FST_DIGEST_MISSING', 'detail'), { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'detail', code: 'FST_DIGEST_MISSING' })
  t.equal(blankProblem(413, 'C', 'd').title, 'Content Too Large')
  t.equal(blankProblem(415, 'C', 'd').title, 'Unsupported Media Type')
  t.equal(blankProblem(499, 'C', 'd').title, 'Bad Request')
})

test('byte sequences and reasons', async (t) => {
  t.equal(byteSequence(Buffer.from([0xfb, 0xff])), ':+/8=:')
  t.equal(invalidReason('sha-512'), 'digest value is not 64 bytes long')
  t.equal(invalidReason('sha-256'), 'digest value is not 32 bytes long')
  t.equal(invalidReason('unixsum'), 'digest value is not 2 bytes long')
  t.equal(invalidReason('foo'), 'digest value cannot be produced by the algorithm')
})

test('collecting failures from checked fields names what the client sent, never the computed value', async (t) => {
  const received = new Map([['sha-256', Buffer.alloc(32, 1)], ['sha-512', Buffer.alloc(3)], ['md5', Buffer.alloc(16)]])
  const checked = [{
    received,
    verification: {
      field: 'Repr-Digest' as const,
      ok: false,
      results: [
        { algorithm: 'sha-256', outcome: 'mismatched' as const },
        { algorithm: 'sha-512', outcome: 'invalid-length' as const },
        { algorithm: 'md5', outcome: 'unsupported' as const }
      ]
    }
  }, {
    received: new Map([['sha-256', Buffer.alloc(32, 2)]]),
    verification: { field: 'Content-Digest' as const, ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' as const }] }
  }]
  t.same(collectFailures(checked), {
    invalid: [{ algorithm: 'sha-512', header: 'Repr-Digest', reason: 'digest value is not 64 bytes long' }],
    mismatched: [{ algorithm: 'sha-256', provided_digest: byteSequence(Buffer.alloc(32, 1)), header: 'Repr-Digest' }]
  })
  t.same(collectUnsupported(checked), [{ algorithm: 'md5', header: 'Repr-Digest' }])
})
