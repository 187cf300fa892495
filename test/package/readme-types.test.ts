// Every js/mjs/ts block of the README type-checks as a TypeScript ES module
// (.mts) under `tsc --strict --module node16 --moduleResolution node16
// --noEmit` (the TypeScript of node_modules, through its API), twice: with
// tsc's default lib for node16's target (the DOM's fetch, Blob, FormData),
// and with lib es2022 and @types/node alone. The blocks are compiled in
// memory as files at the repository's root, so `fastify-digest-fields` and
// `fastify-digest-fields/client` resolve as the package's own name (the
// "exports" of package.json: types/index.d.ts, types/client.d.ts), and
// fastify, undici and the plugins from node_modules. skipLibCheck: the pack
// test checks our declaration files without it; a third party's are not the
// README's. Shell and text blocks are not TypeScript: test/package/examples.test.ts
// runs their curl commands.
//
// The convention for fragments: every block is a piece of one of
// examples/*.mjs (test/package/examples.test.ts checks it). Ahead of its code, a
// block gets that example's import declarations, and `declare const` for
// the values the example defines around it (CONTEXT below), except the names
// the block declares itself. Any other name it uses fails the check.
import { test } from 'tap'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'

const root = join(__dirname, '..', '..')

/** The values the examples define around the README's fragments, and their types there. */
const CONTEXT: Record<string, string> = {
  app: "import('fastify').FastifyInstance",
  root: 'string',
  stored: '{ body: string, sha256: Buffer }',
  report: "import('fastify').RouteHandlerMethod",
  ticks: "import('fastify').RouteHandlerMethod",
  upload: "import('fastify').RouteHandlerMethod",
  health: "import('fastify').RouteHandlerMethod",
  dispatcher: "import('undici').Dispatcher",
  key: "import('http-message-signatures').SigningKey",
  url: 'string',
  base: 'string',
  file: 'string'
}

interface Block { line: number, code: string }

/** The fenced js/mjs/ts blocks of a Markdown text, with the line of their first code line. */
function codeBlocks (markdown: string): Block[] {
  const out: Block[] = []
  for (const match of markdown.matchAll(/^```(?:js|mjs|javascript|ts|typescript)[ \t]*\n([\s\S]*?)^```/gm)) {
    const line = markdown.slice(0, match.index).split('\n').length + 1
    out.push({ line, code: match[1] as string })
  }
  return out
}

/** The names a module's top level declares, imports included. */
function topLevelNames (source: ts.SourceFile): Set<string> {
  const names = new Set<string>()
  const bind = (name: ts.BindingName): void => {
    if (ts.isIdentifier(name)) names.add(name.text)
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name)
  }
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      for (const name of importedNames(statement)) names.add(name)
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) bind(declaration.name)
    } else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name !== undefined) {
      names.add(statement.name.text)
    }
  }
  return names
}

function importedNames (declaration: ts.ImportDeclaration): string[] {
  const clause = declaration.importClause
  if (clause === undefined) return []
  const names = clause.name === undefined ? [] : [clause.name.text]
  const bindings = clause.namedBindings
  if (bindings === undefined) return names
  if (ts.isNamespaceImport(bindings)) return [...names, bindings.name.text]
  return [...names, ...bindings.elements.map((element) => element.name.text)]
}

function parse (name: string, text: string): ts.SourceFile {
  return ts.createSourceFile(name, text, ts.ScriptTarget.ES2022, true)
}

/** The text ahead of a block: its example's imports and CONTEXT, less what the block declares. */
function prelude (block: string, example: string): string {
  const own = topLevelNames(parse('block.mts', block))
  const lines: string[] = []
  const bound = new Set(own)
  for (const statement of parse('example.mts', example).statements) {
    if (!ts.isImportDeclaration(statement)) continue
    const names = importedNames(statement)
    if (names.some((name) => own.has(name))) continue
    lines.push(statement.getText())
    for (const name of names) bound.add(name)
  }
  for (const [name, type] of Object.entries(CONTEXT)) {
    if (!bound.has(name)) lines.push(`declare const ${name}: ${type}`)
  }
  return lines.join('\n') + '\n'
}

const OPTIONS: ts.CompilerOptions = {
  strict: true,
  module: ts.ModuleKind.Node16,
  moduleResolution: ts.ModuleResolutionKind.Node16,
  noEmit: true,
  skipLibCheck: true
}

/** A Node.js project without the DOM lib: the globals (fetch, Blob, FormData) are @types/node's. */
const NO_DOM: ts.CompilerOptions = { ...OPTIONS, lib: ['lib.es2022.d.ts'], types: ['node'] }

/** The diagnostics of a set of in-memory .mts files at the repository's root. */
function check (files: Map<string, string>, options: ts.CompilerOptions): readonly ts.Diagnostic[] {
  const host = ts.createCompilerHost(options, true)
  const getSourceFile = host.getSourceFile.bind(host)
  host.getSourceFile = (name, languageVersion, ...rest) => {
    const text = files.get(name)
    return text === undefined ? getSourceFile(name, languageVersion, ...rest) : ts.createSourceFile(name, text, languageVersion, true)
  }
  const fileExists = host.fileExists.bind(host)
  host.fileExists = (name) => files.has(name) || fileExists(name)
  const readFile = host.readFile.bind(host)
  host.readFile = (name) => files.get(name) ?? readFile(name)
  return ts.getPreEmitDiagnostics(ts.createProgram([...files.keys()], options, host))
}

/** `README.md:LINE: message` for a diagnostic in a block file. */
function describe (diagnostic: ts.Diagnostic, where: Map<string, { line: number, offset: number }>): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
  const file = diagnostic.file
  if (file === undefined || diagnostic.start === undefined) return message
  const at = where.get(file.fileName)
  const { line } = file.getLineAndCharacterOfPosition(diagnostic.start)
  if (at === undefined) return `${file.fileName}:${line + 1}: ${message}`
  return line < at.offset ? `README.md:${at.line} (prelude line ${line + 1}): ${message}` : `README.md:${at.line + line - at.offset}: TS${diagnostic.code}: ${message}`
}

const readme = readFileSync(join(root, 'README.md'), 'utf8')
const examples = readdirSync(join(root, 'examples')).filter((name) => name.endsWith('.mjs'))
  .map((name) => readFileSync(join(root, 'examples', name), 'utf8'))

test('prelude: the example\'s imports and CONTEXT, less the names the block declares', async (t) => {
  const example = "import Fastify from 'fastify'\nimport { createHash } from 'node:crypto'\nconst app = Fastify()\n"
  const head = prelude("import Fastify from 'fastify'\nconst app = Fastify()\nconst { url, base: b } = { url: 'u', base: 'b' }\n", example)
  t.ok(head.startsWith("import { createHash } from 'node:crypto'\n"))
  t.notMatch(head, /import Fastify|declare const (app|url):/)
  t.match(head, 'declare const base: string', '`base: b` binds b')
})

test('every js/mjs/ts block of the README type-checks with tsc --strict, module node16', async (t) => {
  const blocks = codeBlocks(readme)
  t.ok(blocks.length >= 8, `the README has ${blocks.length} code blocks`)
  const files = new Map<string, string>()
  const where = new Map<string, { line: number, offset: number }>()
  for (const [i, { line, code }] of blocks.entries()) {
    const example = examples.find((source) => source.includes(code.trim()))
    if (example === undefined) {
      t.fail(`README.md:${line}: the block is in no examples/*.mjs`)
      continue
    }
    const head = prelude(code, example)
    const name = join(root, `readme-block-${i + 1}.mts`).split('\\').join('/')
    files.set(name, head + code)
    where.set(name, { line, offset: head.split('\n').length - 1 })
  }
  for (const [config, options] of [['default lib (DOM)', OPTIONS], ['lib es2022, types node', NO_DOM]] as const) {
    const diagnostics = check(files, options)
    for (const diagnostic of diagnostics) t.fail(`${config}: ${describe(diagnostic, where)}`)
    t.equal(diagnostics.length, 0, `${config}: ${files.size} blocks, no errors`)
  }
})
