/**
 * The one form of an e-mail address that decides both which user it names and what login and
 * register count it as: Unicode compatibility forms folded (NFKC: fullwidth letters, the Kelvin
 * sign), then lower case. Stored beside each user's address (`users.email_key`, unique), so that
 * PostgreSQL's `lower()`, which depends on the database's locale, decides nothing.
 */
export function emailKey (email: string): string {
  return email.trim().normalize('NFKC').toLowerCase().normalize('NFKC')
}
