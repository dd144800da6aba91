import t, { type Test } from 'tap'
import { catchStopSignals, type StopSignal } from '../../../lib/process/stop-signals.js'

/**
 * catchStopSignals in this process, and what delivers a signal to its listeners only, as Node
 * does on a real one: the test runner has listeners of its own, which a real signal would end
 * the test with. Its listeners are removed when the test ends.
 */
function caught (t: Test) {
  const theirs = { SIGTERM: process.listeners('SIGTERM'), SIGINT: process.listeners('SIGINT') }
  const signals = catchStopSignals()
  const ours = (signal: StopSignal) => process.listeners(signal).filter(listener => !theirs[signal].includes(listener))
  t.teardown(() => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) for (const listener of ours(signal)) process.off(signal, listener)
  })
  const deliver = (signal: StopSignal) => { for (const listener of ours(signal)) (listener as (signal: StopSignal) => void)(signal) }
  return { signals, deliver }
}

t.test('a signal caught before the process knows what to stop is handed over then; later ones are ignored', async t => {
  const { signals, deliver } = caught(t)
  // As while the application's modules load: nothing to stop yet.
  deliver('SIGINT')
  const stopped: StopSignal[] = []
  signals.onStop(signal => stopped.push(signal))
  t.same(stopped, ['SIGINT'], 'handed over at once')
  deliver('SIGTERM')
  t.same(stopped, ['SIGINT'], 'a second signal does not stop it again')
})

t.test('a signal after the process knows what to stop stops it then', async t => {
  const { signals, deliver } = caught(t)
  const stopped: StopSignal[] = []
  signals.onStop(signal => stopped.push(signal))
  t.same(stopped, [], 'nothing before a signal')
  deliver('SIGTERM')
  t.same(stopped, ['SIGTERM'])
})
