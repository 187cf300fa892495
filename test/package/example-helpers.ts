// Running examples/*.mjs as a user runs them (`node examples/x.mjs`,
// importing the package by its name through dist/, so `npm run build`
// first), in child processes. test/package/examples-preload.cjs turns their
// `app.listen({ port: 3000 })` into a free port and reports it over IPC.
import { execFile, fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { TapTest } from '../plugin/request/upload-helpers'

export const root = join(__dirname, '..', '..')
export const examplesDir = join(root, 'examples')
const preload = join(__dirname, 'examples-preload.cjs')

/**
 * The environment of a user's shell, without the test runner's loader
 * options (tap may still follow the children; .taprc keeps examples/ out of
 * the coverage report).
 */
export function plainEnv (): NodeJS.ProcessEnv {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  delete env.NODE_V8_COVERAGE
  // A cell of the compatibility matrix (test/compat/run.js): the examples
  // get the same majors as the tests.
  if (env.COMPAT_ALIASES !== undefined) env.NODE_OPTIONS = `--require ${join(__dirname, '..', 'compat', 'aliases.cjs')}`
  return env
}

/** Start examples/<file> with the preload; resolves with the child and its port once it listens. */
export function spawnExample (t: TapTest, file: string, env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess, port: number }> {
  const child: ChildProcess = fork(join(examplesDir, file), [], {
    cwd: root,
    env: { ...plainEnv(), ...env },
    execArgv: ['--require', preload],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc']
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  t.teardown(() => { child.kill() })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not listen within 10 s: ${output}`)), 10_000)
    child.once('message', (message: { port: number }) => {
      clearTimeout(timer)
      resolve({ child, port: message.port })
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${file} exited with ${String(code)}: ${output}`))
    })
  })
}

/** Start examples/<file> with the preload; resolves with its port once it listens. */
export async function startExample (t: TapTest, file: string, env: NodeJS.ProcessEnv = {}): Promise<number> {
  return (await spawnExample(t, file, env)).port
}

/** Run a client example to its end; resolves with its standard output. */
export function runClient (file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [join(examplesDir, file), ...args], { cwd: root, env: { ...plainEnv(), ...env }, timeout: 10_000 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${file}: ${err.message}\n${stderr}`))
      else resolve(stdout)
    })
  })
}
