// The local OpenID Provider's test people (npm start and npm test): fictitious, with fiscal
// codes whose check character is right. Bind one to an authority with
// `npm run -s cli -- authority add-user <orgId> <fiscalNumber>`; the others sign in and are
// told they have no access. The password is the same for all and local only.
export interface LocalUser {
  /** What the login form takes. */
  login: string;
  givenName: string;
  familyName: string;
  /** As SPID gives it: TINIT- and the fiscal code. */
  fiscalNumber: string;
}

export const LOCAL_PASSWORD = 'registry-local-only';

export const LOCAL_USERS: readonly LocalUser[] = [
  { login: 'mario.rossi', givenName: 'Mario', familyName: 'Rossi', fiscalNumber: 'TINIT-RSSMRA80A01H501U' },
  { login: 'giulia.bianchi', givenName: 'Giulia', familyName: 'Bianchi', fiscalNumber: 'TINIT-BNCGLI85M41F205B' },
  { login: 'luca.verdi', givenName: 'Luca', familyName: 'Verdi', fiscalNumber: 'TINIT-VRDLCU90C10L219G' },
];

/** The registry's client at the local provider (a loopback client: any local port may be its redirect's). */
export const LOCAL_CLIENT_ID = 'guarantee-registry-local';
