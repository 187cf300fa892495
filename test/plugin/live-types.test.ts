// Which streamed responses are live (lib/core/response-plan.ts): the route's
// `live` option, else the response's media type among `liveTypes`.
import { test } from 'tap'
import { isLiveStream } from '../../lib/core/response-plan'
import { normalizeOptions } from '../../lib/plugin/plugin-options'

test('isLiveStream: the media type read lowercase, without parameters and whitespace', async (t) => {
  const cases: Array<[unknown, string]> = [
    ['text/event-stream', 'text/event-stream'],
    ['Text/Event-Stream; charset=utf-8', 'text/event-stream'],
    ['  application/x-ndjson ;q=1', 'application/x-ndjson'],
    [['application/jsonl', 'text/plain'], 'application/jsonl'],
    [[], ''],
    [undefined, ''],
    [42, '']
  ]
  for (const [value, type] of cases) {
    t.equal(isLiveStream(null, new Set([type === '' ? 'text/event-stream' : type]), value), type !== '', JSON.stringify(value))
  }
})

test('isLiveStream: the route option first, then the media type', async (t) => {
  const types = normalizeOptions().liveTypes
  for (const type of types) {
    t.equal(isLiveStream(null, types, `${type}; charset=utf-8`), true, type)
    t.equal(isLiveStream(false, types, type), false, `${type}, live: false`)
  }
  t.equal(isLiveStream(null, types, 'application/octet-stream'), false)
  t.equal(isLiveStream(true, types, 'application/octet-stream'), true, 'live: true')
  t.equal(isLiveStream(null, types, undefined), false, 'no Content-Type')
  t.equal(isLiveStream(null, new Set(['application/x-custom']), 'text/event-stream'), false, 'liveTypes replaces the list')
  t.equal(isLiveStream(null, new Set(), 'text/event-stream'), false, 'no live types')
})

test('isLiveStream: media ranges (RFC 9110 §12.5.1), compared without parameters', async (t) => {
  const text = new Set(['text/*', 'application/x-ndjson'])
  const cases: Array<[unknown, boolean]> = [
    ['text/plain', true],
    ['Text/Plain; charset=utf-8', true],
    ['text/event-stream', true],
    ['application/x-ndjson', true],
    ['application/json', false],
    ['textual/plain', false],
    ['/plain', false],
    ['text', false],
    [undefined, false]
  ]
  for (const [contentType, live] of cases) t.equal(isLiveStream(null, text, contentType), live, `text/*: ${String(contentType)}`)
  t.equal(isLiveStream(false, text, 'text/plain'), false, 'live: false still wins')
  const all = new Set(['*/*'])
  for (const contentType of ['application/octet-stream', 'image/jpeg; q=1', undefined]) {
    t.equal(isLiveStream(null, all, contentType), true, `*/*: ${String(contentType)}`)
  }
  t.equal(isLiveStream(false, all, 'text/plain'), false, '*/*, live: false')
})
