// Validates openapi.json with @readme/openapi-parser (a second opinion beside redocly lint).
import { compileErrors, validate } from '@readme/openapi-parser'

const result = await validate(new URL('../openapi.json', import.meta.url).pathname)
if (!result.valid) {
  console.error(compileErrors(result))
  process.exit(1)
}
console.log(`openapi.json is valid${result.warnings.length ? `, with ${result.warnings.length} warnings` : ''}`)
