// The README's "API and TypeScript" section names every export of both
// entries, and nothing else: the lists are read from its text and compared
// with what lib/index.ts and lib/client/index.ts export.
import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import plugin = require('../../lib/index')
import client = require('../../lib/client/index')

const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8')
const section = /^## API and TypeScript\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? ''

/** The names in backticks of a text, a call's arguments dropped (`computeDigest(algorithm, data)`). */
function codeNames (text: string): string[] {
  return [...text.matchAll(/`([A-Za-z_$][\w$]*)(?:\([^`]*\))?`/g)].map((match) => match[1] as string).sort()
}

test('codeNames', async (t) => {
  t.same(codeNames('`b`, `computeDigest(algorithm, data)`, `types/client.d.ts`, `a`'), ['a', 'b', 'computeDigest'])
})

test('the README names every export of fastify-digest-fields/client', async (t) => {
  const list = /`fastify-digest-fields\/client` entry \(([^;]*);/.exec(section)
  t.ok(list, 'the client\'s list')
  t.same(codeNames(list?.[1] ?? ''), Object.keys(client).sort())
})

test('the README names every export of fastify-digest-fields', async (t) => {
  const list = /Besides the plugin \(default export,\s+also\s+([\s\S]*?)\. Types/.exec(section)
  t.ok(list, 'the main entry\'s list')
  t.same(codeNames(list?.[1] ?? ''), Object.keys(plugin).filter((key) => key !== 'default').sort())
})
