import { test } from 'tap'
import { errors } from '../../lib/core/errors'

test('every error has its FST_DIGEST_* code and a status', async (t) => {
  for (const [code, Ctor] of Object.entries(errors)) {
    const err = new Ctor('a', 'b', 'c')
    t.equal(err.code, code)
    t.ok([400, 406, 413, 415, 500].includes(err.statusCode as number), code)
  }
  t.ok(new errors.FST_DIGEST_INVALID_OPTION('x', 'y') instanceof TypeError)
  t.equal(new errors.FST_DIGEST_MISMATCH('Content-Digest').message, 'The Content-Digest field does not match the content')
})
