import { createHash, randomInt } from 'node:crypto'
import { generateSecret, generateURI, verifySync } from 'otplib'

/** What an authenticator app shows: six digits. */
export const TOTP_CODE_PATTERN = '^[0-9]{6}$'

/**
 * Codes of the time step before and after the server's are taken too (30 s each way): a
 * phone's clock a little off, or a code typed as it changed, still works.
 */
const TOLERANCE_SECONDS = 30

/** A new secret (20 random bytes, base32, as authenticator apps take it). */
export const newTotpSecret = (): string => generateSecret()

/** What an app scans to add the account: its `otpauth://` URI, and the same as a QR code (SVG). */
export async function totpEnrolment (issuer: string, account: string, secret: string): Promise<{ uri: string, qrSvg: string }> {
  const uri = generateURI({ issuer, label: account, secret })
  // Loaded at the first enrolment: few processes ever draw one.
  const { default: QRCode } = await import('qrcode')
  return { uri, qrSvg: await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }) }
}

/**
 * The time step of `code` if it is the secret's code of now (or of a step beside it) and of a
 * step after `lastStep` (a code accepted once is never accepted again, nor one before it);
 * undefined otherwise.
 */
export function acceptedStep (secret: string, code: string, lastStep: number | null): number | undefined {
  try {
    // A TOTP's result: its time step when valid.
    const { valid, timeStep } = verifySync({ secret, token: code, epochTolerance: TOLERANCE_SECONDS, ...(lastStep === null ? {} : { afterTimeStep: lastStep }) }) as { valid: boolean, timeStep?: number }
    return valid ? timeStep : undefined
  } catch {
    // A last step ahead of this clock's window (an instance whose clock runs fast accepted
    // it): no code of now can come after it. (Codes of another length are refused by the
    // routes' schemas; the library throws for them too.)
    return undefined
  }
}

/** How many recovery codes a user gets, each working once. */
export const RECOVERY_CODE_COUNT = 10

/** Letters and digits no one mistakes for one another when typing a code off paper. */
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'

/** A recovery code as written (`xxxxx-xxxxx`, 49 random bits); typed back, case, spaces and dashes do not matter. */
export const RECOVERY_CODE_PATTERN = '^[A-Za-z0-9 -]{10,20}$'

/** New recovery codes, and the SHA-256s the database keeps of them. */
export function newRecoveryCodes (): Array<{ code: string, hash: Buffer }> {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const letters = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('')
    const code = `${letters.slice(0, 5)}-${letters.slice(5)}`
    return { code, hash: recoveryCodeHash(code) }
  })
}

/** What the database keeps of a recovery code, as typed or as written. */
export const recoveryCodeHash = (code: string): Buffer => createHash('sha256').update(code.toLowerCase().replace(/[\s-]/g, '')).digest()
