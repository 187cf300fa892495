// The verdict and its problem details (RFC 9457) for the digest problem
// types of draft-ietf-httpapi-digest-fields-problem-types-06.
import { test } from 'tap'
import type { FieldVerification } from '../../types/index'
import type { Claim } from '../../lib/core/claims'
import { blankProblem, judge as judgeFields, PROBLEM_CONTENT_TYPE } from '../../lib/core/problem'

const IANA = 'https://iana.org/assignments/http-problem-types#'
const policy = { algorithms: ['sha-256', 'sha-512'] as const }

// The draft's type URIs (IANA HTTP Problem Types) and their registered titles.
const PROBLEM_TYPES = {
  unsupported: { type: `${IANA}digest-unsupported-algorithms`, title: 'Unsupported Hashing Algorithms' },
  invalid: { type: `${IANA}digest-invalid-values`, title: 'Invalid Digest Values' },
  mismatched: { type: `${IANA}digest-mismatched-values`, title: 'Mismatched Digest Values' }
}

test('the problem media type', async (t) => {
  t.equal(PROBLEM_CONTENT_TYPE, 'application/problem+json')
})

test('about:blank problems take the status phrase as title', async (t) => {
  t.same(blankProblem(400, 'FST_DIGEST_MISSING', 'detail'), { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'detail', code: 'FST_DIGEST_MISSING' })
  t.equal(blankProblem(413, 'C', 'd').title, 'Content Too Large')
  t.equal(blankProblem(415, 'C', 'd').title, 'Unsupported Media Type')
  t.equal(blankProblem(499, 'C', 'd').title, 'Bad Request')
})

type Checked = [Claim, FieldVerification]

const field = (name: 'Repr-Digest' | 'Content-Digest', results: Array<[string, string, Buffer]>): Checked => [
  { field: name, received: new Map(results.map(([algorithm, , value]) => [algorithm, value.toString('base64')])), decoded: false },
  {
    field: name,
    ok: results.every(([, outcome]) => outcome === 'matched'),
    results: results.map(([algorithm, outcome]) => ({ algorithm, outcome })) as FieldVerification['results']
  }
]

const judge = (checked: Checked[], p: typeof policy, required: boolean): ReturnType<typeof judgeFields> =>
  judgeFields(checked.map(([claim]) => claim), checked.map(([, verification]) => verification), p, required)

/** The expected body of a draft problem type: its type and title, a 400, the detail, the code and the type's member. */
const draftProblem = (type: keyof typeof PROBLEM_TYPES, detail: string, code: string, member: Record<string, unknown>): Record<string, unknown> =>
  ({ ...PROBLEM_TYPES[type], status: 400, detail, code, ...member })

test('the three draft problem types name what the client sent, never the computed value', async (t) => {
  const repr = field('Repr-Digest', [['sha-256', 'mismatched', Buffer.from([0xfb, 0xff])], ['sha-512', 'invalid-length', Buffer.alloc(3)], ['md5', 'unsupported', Buffer.alloc(16)]])
  const content = field('Content-Digest', [['sha-256', 'matched', Buffer.alloc(32, 2)]])
  const invalid = judge([repr, content], policy, false)
  t.same(invalid?.problem, draftProblem('invalid', 'The Repr-Digest field carries a value that the algorithm cannot produce', 'FST_DIGEST_INVALID_VALUE', {
    invalid_digests: [{ algorithm: 'sha-512', header: 'Repr-Digest', reason: 'digest value is not 64 bytes long' }]
  }))
  t.ok(invalid instanceof Error && invalid.code === 'FST_DIGEST_INVALID_VALUE', 'the error carries its problem')
  t.equal(invalid?.headers['want-repr-digest'], 'sha-256=10, sha-512=9')
  const mismatched = judge([field('Repr-Digest', [['sha-256', 'mismatched', Buffer.from([0xfb, 0xff])]]), content], policy, true)
  t.same(mismatched?.problem, draftProblem('mismatched', 'The Repr-Digest field does not match the content', 'FST_DIGEST_MISMATCH', {
    mismatched_digests: [{ algorithm: 'sha-256', provided_digest: ':+/8=:', header: 'Repr-Digest' }]
  }))
  const unsupported = field('Repr-Digest', [['md5', 'unsupported', Buffer.alloc(16)]])
  t.equal(judge([unsupported], policy, false), null, 'not required: nothing refused')
  t.equal(judge([unsupported, content], policy, true), null, 'a verified field suffices')
  t.same(judge([unsupported, unsupported], policy, true)?.problem, draftProblem('unsupported', 'The Repr-Digest field names no algorithm this server accepts', 'FST_DIGEST_UNSUPPORTED_ALGORITHM', {
    unsupported_algorithms: [{ algorithm: 'md5', header: 'Repr-Digest' }, { algorithm: 'md5', header: 'Repr-Digest' }]
  }))
  t.equal(judge([], policy, true)?.problem.code, 'FST_DIGEST_MISSING')
})

test('the reason of an invalid value names the length the algorithm produces', async (t) => {
  const all = { algorithms: ['sha-512', 'sha-256', 'unixsum'] as const }
  for (const [algorithm, length] of [['sha-512', 64], ['sha-256', 32], ['unixsum', 2]] as const) {
    const failure = judge([field('Content-Digest', [[algorithm, 'invalid-length', Buffer.alloc(1)]])], all as never, false)
    t.same(failure?.problem.invalid_digests, [{ algorithm, header: 'Content-Digest', reason: `digest value is not ${length} bytes long` }])
  }
})
