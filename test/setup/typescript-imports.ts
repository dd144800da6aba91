// Loaded with --import by every test process (package.json's tap.node-arg) and, through
// process.execArgv, by every process a test starts: Node strips the types of a .ts file itself,
// and this hook lets the sources' `./x.js` imports name the `./x.ts` beside them, as tsc's
// NodeNext resolution does. In-thread (module.registerHooks): no loader thread, no transpiler.
import { registerHooks } from 'node:module'

registerHooks({
  resolve (specifier, context, nextResolve) {
    if (specifier.endsWith('.js') && specifier.startsWith('.') && context.parentURL?.endsWith('.ts') === true) {
      try {
        return nextResolve(`${specifier.slice(0, -3)}.ts`, context)
      } catch {
        // not a TypeScript source: a .js file of its own
      }
    }
    return nextResolve(specifier, context)
  }
})
