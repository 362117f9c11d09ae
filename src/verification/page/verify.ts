// The public verification page's script (GET /verify), bundled by esbuild when the web process
// starts (../verify-page.ts). It asks the service's own API and nothing else, recomputes every
// proof step with the same code as `cli verify` (../../notarization/proof-checks.ts), hashes a chosen
// file with WebCrypto without uploading it, and marks its results for automated checks:
// [data-verify-result][data-status], [data-check][data-passed], [data-file-match][data-matched-key].
import { AMENDMENT_LABELS } from '../../guarantees/amendment-labels.js';
import type { GuaranteeV2 } from '../../guarantees/guarantee.schemas.js';
import { checkAmendmentProof, checkChain, checkProof, type AmendmentJson, type Check, type CheckId } from '../../notarization/proof-checks.js';
import type { AmendmentProof, NotarizationProof } from '../../notarization/proof.js';
import { toStateView } from '../../guarantees/amendment.serializer.js';
import { stateAfter, type Amendment as FoldedAmendment, type AmendmentType } from '../../guarantees/amendments.js';
import { sha256Hex } from '../../shared/sha256.js';
import { checkLogInBrowser, type LogProofJson } from '../../log/page-checks.js';

type Lang = 'it' | 'en';

const TEXT = {
  it: {
    skip: 'Vai al modulo di verifica',
    brand: 'Registro delle garanzie',
    title: 'Verifica di una garanzia',
    lead: 'Inserisca il numero di polizza e il codice di verifica riportati sulla garanzia. La verifica interroga il registro e ricalcola in questo browser le prove di notarizzazione.',
    policyNumber: 'Numero di polizza',
    checkCode: 'Codice di verifica',
    checkCodeHint: 'Come stampato sulla garanzia: maiuscole, minuscole e spazi contano.',
    optional: 'Dati facoltativi (CIG, importo garantito)',
    cig: 'CIG',
    amountEuro: 'Importo garantito (euro)',
    verify: 'Verifica',
    footer: 'Questa pagina non invia dati ad altri siti: i controlli si svolgono nel suo browser, i file che sceglie non vengono caricati.',
    required: 'Inserisca il numero di polizza e il codice di verifica.',
    badAmount: "L'importo deve essere un numero con al massimo due decimali, ad esempio 15000,50.",
    verifying: 'Verifica in corso…',
    notFound: 'Nessuna garanzia corrisponde a questi dati.',
    notFoundHelp:
      "Controlli di aver copiato esattamente il numero di polizza e il codice di verifica (maiuscole, minuscole e spazi contano) e, se li ha inseriti, CIG e importo. Se i dati sono corretti, la garanzia non risulta in questo registro: non la accetti prima di averne chiarito l'origine con chi dichiara di averla emessa.",
    limited: (s: number) => `Troppe verifiche da questo indirizzo. Riprovi tra ${s} secondi.`,
    invalid: 'La richiesta non è valida: controlli i dati inseriti.',
    failed: 'Il servizio non ha risposto. Riprovi tra qualche istante.',
    found: (n: number) => (n === 1 ? 'Garanzia trovata' : `${n} garanzie trovate con questi codici`),
    several: 'Più emittenti hanno registrato questi codici: controlli quale corrisponde al documento ricevuto.',
    issuer: 'Emittente',
    vat: 'Partita IVA',
    register: 'Iscrizione',
    orgId: 'Identificativo nel registro',
    notRecorded: 'non registrato',
    notarized: 'Registrata e notarizzata: ogni controllo è stato ricalcolato in questo browser.',
    notarizedFailed: 'Attenzione: almeno un controllo della prova NON è superato. Non consideri autentica la garanzia senza chiarimenti.',
    pending: 'Registrata, non ancora notarizzata: la prova sarà disponibile a notarizzazione avvenuta.',
    terms: 'Condizioni',
    policy: 'Numero di polizza',
    actType: 'Tipo di atto',
    garantedAmount: 'Importo garantito',
    contractAmount: 'Importo del contratto',
    emittedAt: 'Emessa il',
    effectiveAt: 'Efficace dal',
    expiresAt: 'Scadenza',
    fixedExpiry: 'Scadenza fissa',
    renewal: 'Rinnovo automatico',
    batchCode: 'Lotto',
    note: 'Note',
    registeredAt: 'Registrata il',
    yes: 'sì',
    no: 'no',
    none: '—',
    notarization: 'Notarizzazione',
    anchor: 'Ancoraggio',
    ledger: 'registro interno con catena di hash',
    evm: 'blockchain EVM',
    txHash: 'Transazione',
    anchoredAt: 'Ancorata il',
    chain: 'Catena',
    block: 'Blocco',
    sender: 'Mittente',
    passed: 'superato',
    failedCheck: 'NON superato',
    documents: 'Documenti',
    file: 'File',
    type: 'Tipo',
    verdict: 'Esito',
    signers: 'Firmatari',
    checksum: 'Impronta SHA-256',
    signedBy: 'Firmato da',
    at: '· data dichiarata dal firmatario:',
    chainTrusted: 'catena attendibile',
    chainUntrusted: 'catena non attendibile',
    chainNotChecked: 'catena non verificata',
    privateDocuments: (n: number) =>
      n === 1
        ? "1 documento riservato dell'emittente non è mostrato (la prova lo comprende)."
        : `${n} documenti riservati dell'emittente non sono mostrati (la prova li comprende).`,
    digestWithheld:
      "L'impronta non si può ricalcolare qui: comprende documenti riservati che la verifica pubblica non mostra. Sono controllati il percorso di Merkle e l'ancoraggio dell'impronta indicata.",
    anchorNotChecked: {
      evm: "Che cosa non si controlla qui: questo browser verifica che la prova sia coerente con sé stessa (la transazione firmata ha l'impronta indicata, contiene la radice ed è firmata dall'indirizzo indicato), ma non interroga la blockchain: non controlla che la transazione sia davvero nella catena né che l'indirizzo sia quello del registro. Per farlo, cerchi la transazione su un nodo o un explorer della catena indicata e confronti il mittente con l'indirizzo che il registro pubblica. Una pagina servita dal registro non può vedere la catena: lo fa «npm run -s cli -- verify <file> --rpc <URL di un nodo>», che interroga il nodo che lei sceglie.",
      ledger:
        'Che cosa non si controlla qui: il registro interno è tenuto dal registro stesso; questo browser verifica che la prova sia coerente con la voce indicata, non che la voce sia quella che il registro ha scritto allora.',
    },
    logTitle: 'Registro di trasparenza',
    logChecking: 'Controllo nel registro di trasparenza…',
    logInclusion: (n: number, size: number) =>
      `La garanzia è la voce ${n} del registro di trasparenza, nel checkpoint di ${size} voci (prova di inclusione ricalcolata in questo browser)`,
    logSignature: 'Il checkpoint è firmato con la chiave del registro pubblicata in /log/key',
    logSignatureNotChecked: 'La firma del checkpoint non si può controllare in questo browser.',
    logCosigners: 'Cofirmato dai testimoni (nomi riportati nel checkpoint; le cofirme non sono verificate qui):',
    logNoWitness: 'Nessun testimone ha ancora cofirmato questo checkpoint.',
    logHonest:
      'Che cosa prova: che la garanzia è nel registro di trasparenza che il registro pubblica. Una pagina servita dal registro non può dimostrare che il registro sia onesto: lo dimostra un testimone indipendente di cui lei conosce la chiave: «npm run -s cli -- verify <file> --witness <chiave del testimone>» verifica la sua cofirma, e un registro che mostrasse storie diverse a lei e al testimone verrebbe scoperto.',
    logFailed: 'Il registro di trasparenza non si è potuto controllare.',
    issuedBy: 'certificato emesso da',
    timestamped: 'marca temporale del',
    qualified: 'certificato dichiarato qualificato',
    qualifiedPerList: 'certificato qualificato secondo la lista di fiducia',
    listed: 'emesso sotto un servizio della lista di fiducia',
    counterSigned: 'Controfirmato da',
    signatureValid: 'firma valida',
    signatureInvalid: 'firma NON valida',
    fileCheck: 'Verifichi il file ricevuto',
    fileHelp: "Trascini qui il file della garanzia o lo scelga: l'impronta viene calcolata in questo browser, il file non viene caricato.",
    choose: 'Scegli un file',
    hashing: "Calcolo dell'impronta…",
    fileMatch: (name: string) => `Il file corrisponde al documento registrato «${name}».`,
    fileNoMatch: 'Il file NON corrisponde a nessun documento registrato per questa garanzia.',
    fileNoMatchPrivate: (n: number) =>
      `Il file non corrisponde a nessun documento mostrato. ${n === 1 ? "L'emittente ha 1 documento riservato" : `L'emittente ha ${n} documenti riservati`}, che qui non si possono confrontare: se il file è uno di questi, ne chieda conferma all'emittente.`,
    fileHash: 'Impronta del file',
    receipt: 'Ricevuta della verifica',
    receiptHelp:
      'Ricevuta firmata dal registro (JWS, EdDSA): la conservi come prova della verifica. Chiunque può controllarla con le chiavi pubblicate in /.well-known/jwks.json.',
    verifiedAt: 'Verificata il',
    print: 'Stampa la ricevuta',
    acts: { BAIL_ACT: 'Cauzione (fideiussione)', POST_SALE: 'Post-vendita', OTHER: 'Altro' } as Record<string, string>,
    status: {
      Clean: 'Nessuna minaccia rilevata',
      Signed: 'Firmato, firma verificata',
      Infected: 'Minaccia rilevata',
      Error: 'Errore di verifica',
      'In Progress': 'Verifica in corso',
    } as Record<string, string>,
    stateNow: 'Che cosa copre oggi',
    statusText: {
      ACTIVE: 'In vigore',
      PARTIALLY_RELEASED: 'In vigore, parzialmente svincolata',
      CLAIMED: 'Escussa: il beneficiario ha chiesto il pagamento',
      EXPIRED: 'Scaduta: non copre più il contratto',
      RELEASED: 'Svincolata: non copre più il contratto',
      CANCELLED: 'Annullata: non copre più il contratto',
    } as Record<string, string>,
    currentAmount: 'Importo garantito oggi',
    currentExpiry: 'Scadenza oggi',
    openClaim: 'Escussione aperta',
    claimedOn: 'richiesta il',
    claimDue: "Termine di pagamento dell'emittente",
    scheduled: 'Registrata, in vigore più avanti',
    from: 'dal',
    registeredTerms: "Condizioni all'emissione",
    history: 'Storia della garanzia',
    noAmendments: "Nessuna appendice registrata: la garanzia è com'era all'emissione.",
    earlierAmendments: (n: number) =>
      `Sono mostrate le appendici più recenti; le ${n} precedenti non sono elencate: la prova della prima mostrata le collega alla catena. Lo stato di oggi è quello indicato dal registro, non ricalcolato qui.`,
    types: AMENDMENT_LABELS.it as Record<string, string>,
    newExpiry: 'Nuova scadenza',
    newAmount: 'Nuovo importo garantito',
    claimedAmount: 'Importo richiesto',
    paidAmount: 'Importo pagato',
    reason: 'Motivo',
    attached: 'Documenti',
    recordedAt: 'Registrata il',
    actor: 'Registrata da',
    actors: { issuer: "l'emittente", authority: 'la stazione appaltante' } as Record<string, string>,
    consent: 'Consenso della stazione appaltante',
    consents: { PENDING: 'in attesa', ACCEPTED: 'dato', REFUSED: 'negato' } as Record<string, string>,
    answer: 'Risposta',
    answers: (seq: number, decision: string) => `appendice ${seq} ${decision === 'ACCEPT' ? 'accettata' : 'rifiutata'}`,
    amendmentNotarized: 'Notarizzata: ogni controllo ricalcolato in questo browser.',
    amendmentFailed: 'Attenzione: almeno un controllo NON è superato.',
    amendmentPending: 'Registrata, non ancora notarizzata.',
    historyFailed: 'Attenzione: la storia della garanzia NON supera i controlli (vedi sotto): lo stato indicato potrebbe non essere attendibile.',
    historyUnnotarized: 'Lo stato tiene conto di appendici non (ancora) notarizzate: vedi la storia della garanzia.',
    amendmentBlocked: 'Non sarà notarizzata:',
    amendmentChecks: {
      'proof-subject': 'La prova riguarda questa appendice',
      digest: "L'impronta dell'appendice (RFC 8785, SHA-256), con i suoi legami, coincide con la prova",
      'tx-named': "L'appendice indica la transazione di ancoraggio",
    } as Partial<Record<CheckId, string>>,
    checks: {
      'guarantee-shape': 'I dati della garanzia sono completi',
      'proof-shape': 'La prova è completa',
      'proof-subject': 'La prova riguarda questa garanzia',
      digest: "L'impronta della garanzia (RFC 8785, SHA-256) coincide con la prova",
      'path-well-formed': 'Il percorso di Merkle è ben formato',
      'merkle-root': 'Il percorso di Merkle porta alla radice',
      'path-position': 'Il percorso corrisponde alla posizione nel lotto',
      'tx-named': 'La garanzia indica la transazione di ancoraggio',
      'ledger-entry-present': 'La prova contiene la voce del registro',
      'ledger-root': 'La voce del registro contiene la radice',
      'ledger-size': 'La voce del registro indica la dimensione del lotto',
      'ledger-hash': "La voce del registro ha l'impronta della transazione",
      'evm-tx-present': 'La prova contiene la transazione firmata',
      'evm-tx-hash': "La transazione firmata ha l'impronta indicata",
      'evm-tx-root': 'La transazione firmata contiene la radice',
      'evm-tx-sender': "La transazione è firmata dall'indirizzo indicato nella prova, per la catena indicata",
      'amendment-shape': "I dati dell'appendice sono completi",
      'chain-order': 'Le appendici sono in ordine, 1, 2, 3…, tutte di questa garanzia',
      'chain-start': 'La catena delle appendici parte da questa garanzia',
      'chain-link': "L'appendice è legata a quella che la precede",
      'chain-notarized': "L'appendice è notarizzata",
      'chain-state': 'Lo stato di oggi segue dalla garanzia e dalle sue appendici, ricalcolato in questo browser',
    } satisfies Record<CheckId, string>,
  },
  en: {
    skip: 'Skip to the verification form',
    brand: 'Guarantee Registry',
    title: 'Guarantee verification',
    lead: 'Enter the policy number and the verification code printed on the guarantee. The check asks the registry and recomputes the notarization proofs in this browser.',
    policyNumber: 'Policy number',
    checkCode: 'Verification code',
    checkCodeHint: 'As printed on the guarantee: upper and lower case and spaces matter.',
    optional: 'Optional data (CIG, guaranteed amount)',
    cig: 'CIG',
    amountEuro: 'Guaranteed amount (euro)',
    verify: 'Verify',
    footer: 'This page sends nothing to other sites: the checks run in your browser, and files you choose are never uploaded.',
    required: 'Enter the policy number and the verification code.',
    badAmount: 'The amount must be a number with at most two decimals, such as 15000.50.',
    verifying: 'Verifying…',
    notFound: 'No guarantee matches these details.',
    notFoundHelp:
      'Check that you copied the policy number and the verification code exactly (case and spaces matter) and, if you entered them, the CIG and the amount. If they are right, the guarantee is not in this registry: do not accept it before clarifying its origin with whoever claims to have issued it.',
    limited: (s: number) => `Too many verifications from this address. Try again in ${s} seconds.`,
    invalid: 'The request is not valid: check what you entered.',
    failed: 'The service did not answer. Try again in a moment.',
    found: (n: number) => (n === 1 ? 'Guarantee found' : `${n} guarantees found with these codes`),
    several: 'Several issuers registered these codes: check which one matches the document you received.',
    issuer: 'Issuer',
    vat: 'VAT number',
    register: 'Register entry',
    orgId: 'Identifier in the registry',
    notRecorded: 'not recorded',
    notarized: 'Registered and notarized: every check was recomputed in this browser.',
    notarizedFailed: 'Warning: at least one proof check did NOT pass. Do not treat the guarantee as genuine without clarification.',
    pending: 'Registered, not yet notarized: the proof will be available once it is notarized.',
    terms: 'Terms',
    policy: 'Policy number',
    actType: 'Act type',
    garantedAmount: 'Guaranteed amount',
    contractAmount: 'Contract amount',
    emittedAt: 'Issued on',
    effectiveAt: 'Effective from',
    expiresAt: 'Expires',
    fixedExpiry: 'Fixed expiry',
    renewal: 'Automatic renewal',
    batchCode: 'Batch',
    note: 'Notes',
    registeredAt: 'Registered on',
    yes: 'yes',
    no: 'no',
    none: '—',
    notarization: 'Notarization',
    anchor: 'Anchor',
    ledger: 'internal hash-chained ledger',
    evm: 'EVM blockchain',
    txHash: 'Transaction',
    anchoredAt: 'Anchored on',
    chain: 'Chain',
    block: 'Block',
    sender: 'Sender',
    passed: 'passed',
    failedCheck: 'FAILED',
    documents: 'Documents',
    file: 'File',
    type: 'Type',
    verdict: 'Verdict',
    signers: 'Signers',
    checksum: 'SHA-256 fingerprint',
    signedBy: 'Signed by',
    at: '· date the signer claims:',
    chainTrusted: 'trusted chain',
    chainUntrusted: 'untrusted chain',
    chainNotChecked: 'chain not checked',
    privateDocuments: (n: number) =>
      n === 1
        ? "1 of the issuer's private documents is not shown (the proof covers it)."
        : `${n} of the issuer's private documents are not shown (the proof covers them).`,
    digestWithheld:
      'The fingerprint cannot be recomputed here: it covers private documents the public verification does not show. The Merkle path and the anchor of the stated fingerprint are checked.',
    anchorNotChecked: {
      evm: "What is not checked here: this browser checks that the proof is consistent with itself (the signed transaction hashes to the stated id, carries the root and is signed by the stated address), but it does not query the blockchain: it does not check that the transaction is really on the chain, nor that the address is the registry's. To do so, look the transaction up on a node or an explorer of the stated chain and compare the sender with the address the registry publishes. A page served by the registry cannot see the chain: “npm run -s cli -- verify <file> --rpc <a node's URL>” does, asking the node you choose.",
      ledger:
        'What is not checked here: the internal ledger is kept by the registry itself; this browser checks that the proof agrees with the stated entry, not that the entry is the one the registry wrote at the time.',
    },
    logTitle: 'Transparency log',
    logChecking: 'Checking the transparency log…',
    logInclusion: (n: number, size: number) =>
      `The guarantee is entry ${n} of the transparency log, in the checkpoint of ${size} entries (inclusion proof recomputed in this browser)`,
    logSignature: 'The checkpoint is signed by the key the registry publishes at /log/key',
    logSignatureNotChecked: "The checkpoint's signature cannot be checked in this browser.",
    logCosigners: 'Cosigned by the witnesses (names the checkpoint carries; their cosignatures are not verified here):',
    logNoWitness: 'No witness has cosigned this checkpoint yet.',
    logHonest:
      "What this proves: that the guarantee is in the transparency log the registry publishes. A page served by the registry cannot prove the registry honest: an independent witness whose key you know does: “npm run -s cli -- verify <file> --witness <the witness's key>” checks its cosignature, and a registry showing you and the witness different histories would be caught.",
    logFailed: 'The transparency log could not be checked.',
    issuedBy: 'certificate issued by',
    timestamped: 'timestamped on',
    qualified: 'certificate declared qualified',
    qualifiedPerList: 'qualified certificate per the trusted list',
    listed: 'issued under a service of the trusted list',
    counterSigned: 'Counter-signed by',
    signatureValid: 'valid signature',
    signatureInvalid: 'signature NOT valid',
    fileCheck: 'Check the file you received',
    fileHelp: "Drop the guarantee's file here or choose it: its fingerprint is computed in this browser, the file is not uploaded.",
    choose: 'Choose a file',
    hashing: 'Computing the fingerprint…',
    fileMatch: (name: string) => `The file matches the registered document “${name}”.`,
    fileNoMatch: 'The file does NOT match any document registered for this guarantee.',
    fileNoMatchPrivate: (n: number) =>
      `The file matches none of the documents shown. The issuer has ${n} private document${n === 1 ? '' : 's'}, which cannot be compared here: if the file is one of them, ask the issuer to confirm it.`,
    fileHash: 'File fingerprint',
    receipt: 'Verification receipt',
    receiptHelp:
      'A receipt signed by the registry (JWS, EdDSA): keep it as proof of the check. Anyone can verify it with the keys published at /.well-known/jwks.json.',
    verifiedAt: 'Verified on',
    print: 'Print the receipt',
    acts: { BAIL_ACT: 'Bail bond (surety)', POST_SALE: 'After-sale', OTHER: 'Other' } as Record<string, string>,
    status: {
      Clean: 'No threat found',
      Signed: 'Signed, signature verified',
      Infected: 'Threat found',
      Error: 'Could not be checked',
      'In Progress': 'Being checked',
    } as Record<string, string>,
    stateNow: 'What it covers today',
    statusText: {
      ACTIVE: 'Active',
      PARTIALLY_RELEASED: 'Active, partially released',
      CLAIMED: 'Claimed: the beneficiary has asked for payment',
      EXPIRED: 'Expired: it no longer covers the contract',
      RELEASED: 'Released: it no longer covers the contract',
      CANCELLED: 'Cancelled: it no longer covers the contract',
    } as Record<string, string>,
    currentAmount: 'Guaranteed amount today',
    currentExpiry: 'Expiry today',
    openClaim: 'Open claim',
    claimedOn: 'made on',
    claimDue: "The issuer's payment deadline",
    scheduled: 'Recorded, in effect later',
    from: 'from',
    registeredTerms: 'Terms when issued',
    history: "The guarantee's history",
    noAmendments: 'No amendment recorded: the guarantee is as issued.',
    earlierAmendments: (n: number) =>
      `The latest amendments are shown; the ${n} before them are not listed: the first one shown links to them through its proof. Today's status is the registry's, not recomputed here.`,
    types: AMENDMENT_LABELS.en as Record<string, string>,
    newExpiry: 'New expiry',
    newAmount: 'New guaranteed amount',
    claimedAmount: 'Amount claimed',
    paidAmount: 'Amount paid',
    reason: 'Reason',
    attached: 'Documents',
    recordedAt: 'Recorded on',
    actor: 'Recorded by',
    actors: { issuer: 'the issuer', authority: 'the contracting authority' } as Record<string, string>,
    consent: "The contracting authority's consent",
    consents: { PENDING: 'awaited', ACCEPTED: 'given', REFUSED: 'refused' } as Record<string, string>,
    answer: 'Answer',
    answers: (seq: number, decision: string) => `amendment ${seq} ${decision === 'ACCEPT' ? 'accepted' : 'refused'}`,
    amendmentNotarized: 'Notarized: every check recomputed in this browser.',
    amendmentFailed: 'Warning: at least one check did NOT pass.',
    amendmentPending: 'Recorded, not yet notarized.',
    historyFailed: "Warning: the guarantee's history does NOT pass its checks (see below): the status shown may not be reliable.",
    historyUnnotarized: "The status counts amendments not (yet) notarized: see the guarantee's history.",
    amendmentBlocked: 'It will not be notarized:',
    amendmentChecks: {
      'proof-subject': 'The proof is about this amendment',
      digest: "The amendment's fingerprint (RFC 8785, SHA-256), with its links, equals the proof's",
      'tx-named': 'The amendment names the anchor transaction',
    } as Partial<Record<CheckId, string>>,
    checks: {
      'guarantee-shape': "The guarantee's data is complete",
      'proof-shape': 'The proof is complete',
      'proof-subject': 'The proof is about this guarantee',
      digest: "The guarantee's fingerprint (RFC 8785, SHA-256) equals the proof's",
      'path-well-formed': 'The Merkle path is well formed',
      'merkle-root': 'The Merkle path leads to the root',
      'path-position': 'The path matches the position in the batch',
      'tx-named': 'The guarantee names the anchor transaction',
      'ledger-entry-present': 'The proof carries the ledger entry',
      'ledger-root': 'The ledger entry holds the root',
      'ledger-size': 'The ledger entry names the batch size',
      'ledger-hash': 'The ledger entry hashes to the transaction',
      'evm-tx-present': 'The proof carries the signed transaction',
      'evm-tx-hash': 'The signed transaction hashes to the transaction id',
      'evm-tx-root': 'The signed transaction carries the root',
      'evm-tx-sender': 'The transaction is signed by the address the proof states, for the chain it states',
      'amendment-shape': "The amendment's data is complete",
      'chain-order': 'The amendments are in order, 1, 2, 3…, all of this guarantee',
      'chain-start': 'The chain of amendments starts from this guarantee',
      'chain-link': 'The amendment is linked to the one before it',
      'chain-notarized': 'The amendment is notarized',
      'chain-state': "Today's status follows from the guarantee and its amendments, recomputed in this browser",
    } satisfies Record<CheckId, string>,
  },
};

type Strings = typeof TEXT.it;

interface Signer {
  commonName: string | null;
  issuer?: string | null;
  signingTime: string | null;
  timestampedAt?: string | null;
  qualified?: boolean;
  trustedList?: { territory: string; provider: string; qualified: boolean } | null;
  counterSignature?: boolean;
  valid: boolean;
  chain: string;
}
interface Doc {
  type: string | null;
  key: string;
  originalFileName: string | null;
  checksum: string | null;
  status: string | null;
  signature: { outcome: string; signers: Signer[] } | null;
}
interface Guarantee {
  id: string;
  orgId: string;
  createdAt: string;
  txHash: string | null;
  notarizationStatus: string | null;
  details: {
    policyNumber: string | null;
    actType: string | null;
    emittedAt: string | null;
    effectiveAt: string | null;
    expiresAt: string | null;
    isFixedExpiry: boolean | null;
    cig: string | null;
    batchCode: string | null;
  };
  economics: { garantedAmount: number | null; contractAmount: number | null; isAutomaticRenewal: boolean | null };
  note: { shared: string };
}
interface Proof {
  anchor: { kind: string; txHash: string; anchoredAt: string; chainId?: number; blockNumber?: number; from?: string };
}
interface State {
  status: string;
  garantedAmount: number | null;
  expiresAt: string | null;
  openClaim: { seq: number; claimedAmount: number; effectiveAt: string } | null;
  claimDueAt: string | null;
  lastSeq: number;
  /** Amendments recorded that apply from a later date (absent from a registry before they did). */
  scheduled?: Array<{ seq: number; type: string; effectiveAt: string }>;
}
type Amendment = AmendmentJson & { proof: Proof | null; notarizationReason?: string; privateDocuments?: number };
interface Match {
  issuer: { orgId: string; name: string; vatNumber: string | null; register: string | null };
  state: State;
  guarantee: Guarantee;
  proof: Proof | null;
  amendments: Amendment[];
  documents: Doc[];
  /** The registration's documents not shown (not uploaded as public). */
  privateDocuments?: number;
  /** Amendments before those listed (a long history: the latest only). */
  earlierAmendments?: number;
}
interface Result {
  verifiedAt: string;
  matches: Match[];
  receipt: string;
}

type Outcome = { kind: 'found'; result: Result } | { kind: 'not-found' } | { kind: 'limited'; seconds: number } | { kind: 'invalid' } | { kind: 'failed' };

let lang: Lang = 'it';
let last: Outcome | undefined;
let fileResult: { name: string; hash: string; matched: Doc | undefined } | undefined;
const t = (): Strings => TEXT[lang];

type Child = Node | string | null | undefined | false;
function h(tag: string, attrs: Record<string, string | boolean | undefined> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

const byId = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const locale = (): string => (lang === 'it' ? 'it-IT' : 'en-GB');
const when = (iso: string | null): string =>
  iso === null ? t().none : new Intl.DateTimeFormat(locale(), { dateStyle: 'long', timeStyle: 'short', timeZone: 'Europe/Rome' }).format(new Date(iso));
const day = (iso: string | null): string =>
  iso === null ? t().none : new Intl.DateTimeFormat(locale(), { dateStyle: 'long', timeZone: 'Europe/Rome' }).format(new Date(iso));
const euro = (n: number | null): string => (n === null ? t().none : new Intl.NumberFormat(locale(), { style: 'currency', currency: 'EUR' }).format(n));
const yesNo = (b: boolean | null): string => (b === null ? t().none : b ? t().yes : t().no);

function row(label: string, value: Child, attrs: Record<string, string> = {}): HTMLElement {
  return h('div', { class: 'row', ...attrs }, h('dt', {}, label), h('dd', {}, value ?? t().none));
}

function issuerBlock(m: Match): HTMLElement {
  const s = t();
  return h(
    'section',
    { class: 'issuer', 'aria-label': s.issuer },
    h('p', { class: 'eyebrow' }, s.issuer),
    h('h3', { class: 'issuer-name' }, m.issuer.name),
    h(
      'dl',
      { class: 'facts' },
      row(s.vat, m.issuer.vatNumber ?? s.notRecorded),
      row(s.register, m.issuer.register ?? s.notRecorded),
      row(s.orgId, h('code', {}, m.issuer.orgId)),
    ),
  );
}

function termsBlock(g: Guarantee): HTMLElement {
  const s = t();
  const d = g.details;
  return h(
    'section',
    { class: 'block' },
    h('h4', {}, s.registeredTerms),
    h(
      'dl',
      { class: 'facts' },
      row(s.policy, d.policyNumber),
      row(s.actType, d.actType === null ? null : (s.acts[d.actType] ?? d.actType)),
      row(s.cig, d.cig),
      row(s.garantedAmount, euro(g.economics.garantedAmount)),
      row(s.contractAmount, euro(g.economics.contractAmount)),
      row(s.emittedAt, day(d.emittedAt)),
      row(s.effectiveAt, day(d.effectiveAt)),
      row(s.expiresAt, day(d.expiresAt)),
      row(s.fixedExpiry, yesNo(d.isFixedExpiry)),
      row(s.renewal, yesNo(g.economics.isAutomaticRenewal)),
      d.batchCode !== null && row(s.batchCode, d.batchCode),
      g.note.shared !== '' && row(s.note, g.note.shared),
      row(s.registeredAt, when(g.createdAt)),
    ),
  );
}

/** One check's line: its mark, then its label and verdict in one box (a long label wraps as text beside the mark). */
function checkLine(attrs: Record<string, string>, ok: boolean, label: string, detail?: string): HTMLElement {
  const s = t();
  return h(
    'li',
    { class: ok ? 'check ok' : 'check bad', ...attrs, 'data-passed': String(ok) },
    h('span', { class: 'mark', 'aria-hidden': 'true' }, ok ? '✓' : '✗'),
    h('span', { class: 'label' }, label, h('span', { class: 'verdict' }, ` — ${ok ? s.passed : s.failedCheck}`)),
    !ok && detail !== undefined && h('small', { class: 'detail' }, detail),
  );
}

function checkItem(c: Check, labels: Partial<Record<CheckId, string>> = {}): HTMLElement {
  return checkLine({ 'data-check': c.id }, c.ok, labels[c.id] ?? t().checks[c.id], c.detail);
}

/** The checks of `cli verify`, on the answer as received; a malformed proof is a failed check, not an exception. */
function proofChecks(m: Match): Check[] {
  try {
    const checks = checkProof(m.guarantee as unknown as GuaranteeV2, m.proof as unknown as NotarizationProof);
    // Private documents are not in the answer: the record cannot be hashed again here (said beside the checks).
    return (m.privateDocuments ?? 0) > 0 ? checks.filter((c) => c.id !== 'digest') : checks;
  } catch (err) {
    return [{ id: 'proof-shape', name: 'proof JSON is a notarization proof', ok: false, detail: (err as Error).message }];
  }
}

function notarizationBlock(m: Match): HTMLElement {
  const s = t();
  if (!m.proof) return h('section', { class: 'block' }, h('h4', {}, s.notarization), h('p', { class: 'banner wait', role: 'status' }, s.pending));
  const checks = proofChecks(m);
  const ok = checks.every((c) => c.ok);
  const a = m.proof.anchor;
  return h(
    'section',
    { class: 'block' },
    h('h4', {}, s.notarization),
    h('p', { class: ok ? 'banner good' : 'banner bad' }, ok ? s.notarized : s.notarizedFailed),
    h('ul', { class: 'checks' }, ...checks.map((c) => checkItem(c))),
    (m.privateDocuments ?? 0) > 0 && h('p', { class: 'muted', 'data-digest-withheld': '' }, s.digestWithheld),
    h('p', { class: 'muted small', 'data-not-checked': a.kind }, a.kind === 'evm' ? s.anchorNotChecked.evm : s.anchorNotChecked.ledger),
    h(
      'dl',
      { class: 'facts' },
      row(s.anchor, a.kind === 'evm' ? s.evm : s.ledger),
      row(s.txHash, h('code', { class: 'hash' }, a.txHash)),
      row(s.anchoredAt, when(a.anchoredAt)),
      a.chainId !== undefined && row(s.chain, String(a.chainId)),
      a.blockNumber !== undefined && row(s.block, String(a.blockNumber)),
      a.from !== undefined && row(s.sender, h('code', { class: 'hash' }, a.from)),
    ),
    logBlock('record', m.proof as unknown as { digest: string; log?: LogProofJson }),
  );
}

/** The log's verifier key, asked once of this origin (GET /log/key). */
let logKey: Promise<string | undefined> | undefined;
const publishedLogKey = () =>
  (logKey ??= fetch('/log/key').then(
    async (r) => (r.ok ? (await r.text()).trim() : undefined),
    () => undefined,
  ));

/** The proof's transparency log, checked here once the page is shown: inclusion, signature, cosigners' names, and what it proves. */
function logBlock(kind: 'record' | 'amendment', proof: { digest: string; log?: LogProofJson }): HTMLElement | false {
  const s = t();
  const log = proof.log;
  if (!log) return false;
  const box = h('div', { class: 'log', 'data-log': '' }, h('h5', {}, s.logTitle), h('p', { class: 'muted', role: 'status' }, s.logChecking));
  void (async () => {
    try {
      const r = await checkLogInBrowser({ kind, digest: proof.digest }, log, await publishedLogKey());
      const item = (id: string, ok: boolean, label: string, detail?: string) => checkLine({ 'data-log-check': id }, ok, label, detail);
      const parts: Child[] = [
        h('h5', {}, s.logTitle),
        h(
          'ul',
          { class: 'checks' },
          item('inclusion', r.inclusion.ok, s.logInclusion(log.index, r.size), r.inclusion.detail),
          r.signature && item('signature', r.signature.ok, s.logSignature, r.signature.detail),
        ),
        !r.signature && h('p', { class: 'muted small' }, s.logSignatureNotChecked),
        r.cosigners.length
          ? h('p', { class: 'small' }, `${s.logCosigners} `, ...r.cosigners.map((c) => h('code', { 'data-log-cosigner': c }, c)))
          : h('p', { class: 'muted small', 'data-log-cosigner-none': '' }, s.logNoWitness),
        h('p', { class: 'muted small', 'data-log-proves': '' }, s.logHonest),
      ];
      box.replaceChildren(...parts.filter((p): p is Node | string => !!p));
    } catch (err) {
      box.replaceChildren(h('h5', {}, s.logTitle), h('p', { class: 'banner bad', 'data-log-failed': '' }, `${s.logFailed} ${(err as Error).message}`));
    }
  })();
  return box;
}

/** The status's colour: still covering (good), claimed (wait), covering no more (bad). */
const tone = (status: string): string => (status === 'ACTIVE' || status === 'PARTIALLY_RELEASED' ? 'good' : status === 'CLAIMED' ? 'wait' : 'bad');

/** Every check of the history passes (the chain's order, the state folded here, and each notarized amendment's own checks and links). */
function historyHolds(m: Match, verifiedAt: string): boolean {
  const chain = chainChecks(m, verifiedAt);
  return chain.every((c) => c.ok || c.id === 'chain-notarized') && m.amendments.every((a) => !a.proof || amendmentChecks(a, chain).every((c) => c.ok));
}

function stateBlock(m: Match, verifiedAt: string): HTMLElement {
  const s = t();
  const st = m.state;
  const holds = historyHolds(m, verifiedAt);
  const unnotarized = m.amendments.some((a) => !a.proof);
  return h(
    'section',
    { class: 'block state', 'data-guarantee-state': st.status, 'data-history-holds': String(holds) },
    h('h4', {}, s.stateNow),
    h('p', { class: `banner ${tone(st.status)} status-now`, role: 'status' }, s.statusText[st.status] ?? st.status),
    !holds && h('p', { class: 'banner bad', role: 'alert' }, s.historyFailed),
    holds && unnotarized && h('p', { class: 'banner wait caveat' }, s.historyUnnotarized),
    h(
      'dl',
      { class: 'facts' },
      row(s.currentAmount, euro(st.garantedAmount)),
      row(s.currentExpiry, day(st.expiresAt)),
      st.openClaim && row(s.openClaim, `${euro(st.openClaim.claimedAmount)}, ${s.claimedOn} ${day(st.openClaim.effectiveAt)}`),
      st.claimDueAt !== null && row(s.claimDue, day(st.claimDueAt)),
      ...(st.scheduled ?? []).map((a) =>
        row(s.scheduled, `${a.seq}. ${s.types[a.type] ?? a.type}, ${s.from} ${day(a.effectiveAt)}`, { 'data-scheduled': String(a.seq) }),
      ),
    ),
  );
}

/** The chain's checks (the order of all; each amendment's links), on the answer as received; a malformed answer is a failed check. */
function chainChecks(m: Match, verifiedAt: string): Check[] {
  try {
    return [
      ...checkChain(
        m.guarantee as unknown as GuaranteeV2,
        m.amendments,
        m.amendments.map((a) => (a.proof as unknown as AmendmentProof | null) ?? undefined),
        {
          ...((m.privateDocuments ?? 0) > 0 && m.proof && { guaranteeDigest: (m.proof as unknown as NotarizationProof).digest }),
          amendment: (seq) => (m.amendments.find((a) => a.seq === seq)?.privateDocuments ?? 0) > 0,
          before: m.earlierAmendments ?? 0,
        },
      ),
      // The state folds from the registration through every amendment: not here when the earliest are not listed.
      ...((m.earlierAmendments ?? 0) > 0 ? [] : [stateCheck(m, verifiedAt)]),
    ];
  } catch (err) {
    return [{ id: 'chain-order', name: 'the chain could not be checked', ok: false, detail: (err as Error).message }];
  }
}

const dateOrNull = (v: string | null | undefined): Date | null => (v === null || v === undefined ? null : new Date(v));

/** The state folded here from the registration and the amendments as received, at the verification's time, against the registry's. */
function stateCheck(m: Match, verifiedAt: string): Check {
  const g = m.guarantee;
  const amendments: FoldedAmendment[] = m.amendments.map((a) => ({
    id: a.id,
    guaranteeId: a.guaranteeId,
    seq: a.seq,
    type: a.type as AmendmentType,
    actor: a.actor === 'authority' ? 'authority' : 'issuer',
    actorOrgId: a.actorOrgId ?? null,
    amendmentSeq: a.amendmentSeq ?? null,
    decision: a.decision === 'ACCEPT' || a.decision === 'REFUSE' ? a.decision : null,
    consent: a.consent === 'PENDING' || a.consent === 'ACCEPTED' || a.consent === 'REFUSED' ? a.consent : null,
    effectiveAt: new Date(a.effectiveAt),
    expiresAt: dateOrNull(a.expiresAt),
    garantedAmount: a.garantedAmount ?? null,
    claimedAmount: a.claimedAmount ?? null,
    paidAmount: a.paidAmount ?? null,
    reason: a.reason,
    docs: [],
    createdAt: new Date(a.createdAt),
    notarizationStatus: 'PENDING',
    txHash: null,
  }));
  const issued = { garantedAmount: g.economics.garantedAmount, expiresAt: dateOrNull(g.details.expiresAt), isAutomaticRenewal: g.economics.isAutomaticRenewal };
  const folded = toStateView(stateAfter(issued, amendments, new Date(verifiedAt)));
  const same = JSON.stringify(toStateView0(folded)) === JSON.stringify(toStateView0(m.state));
  return {
    id: 'chain-state',
    name: "today's state follows from the guarantee and its amendments",
    ok: same,
    ...(!same && { detail: `recomputed ${folded.status}, the registry says ${m.state.status}` }),
  };
}

/** The registry's state in the serializer's key order, for comparison. */
const toStateView0 = (st: State) => ({
  status: st.status,
  garantedAmount: st.garantedAmount,
  expiresAt: st.expiresAt,
  openClaim: st.openClaim && { seq: st.openClaim.seq, claimedAmount: st.openClaim.claimedAmount, effectiveAt: st.openClaim.effectiveAt },
  claimDueAt: st.claimDueAt,
  lastSeq: st.lastSeq,
  scheduled: (st.scheduled ?? []).map((a) => ({ seq: a.seq, type: a.type, effectiveAt: a.effectiveAt })),
});

function amendmentChecks(a: Amendment, chain: Check[]): Check[] {
  try {
    const own = checkAmendmentProof(a, a.proof as unknown as AmendmentProof).filter((c) => c.id !== 'digest' || !(a.privateDocuments ?? 0));
    return [...own, ...chain.filter((c) => c.seq === a.seq && c.id !== 'chain-notarized')];
  } catch (err) {
    return [{ id: 'proof-shape', name: "proof JSON is an amendment's proof", ok: false, detail: (err as Error).message }];
  }
}

function amendmentItem(a: Amendment, chain: Check[]): HTMLElement {
  const s = t();
  const checks = a.proof ? amendmentChecks(a, chain) : [];
  const ok = checks.every((c) => c.ok);
  return h(
    'li',
    { class: 'amendment', 'data-amendment': '', 'data-seq': String(a.seq), 'data-type': a.type, 'data-actor': a.actor ?? 'issuer' },
    h('h5', { class: 'amendment-title' }, h('span', { class: 'seq' }, `${a.seq}.`), ` ${s.types[a.type] ?? a.type} · ${day(a.effectiveAt)}`),
    h(
      'dl',
      { class: 'facts' },
      a.expiresAt !== undefined && row(s.newExpiry, day(a.expiresAt)),
      a.garantedAmount !== undefined && row(s.newAmount, euro(a.garantedAmount)),
      a.claimedAmount !== undefined && row(s.claimedAmount, euro(a.claimedAmount)),
      a.paidAmount !== undefined && row(s.paidAmount, euro(a.paidAmount)),
      a.amendmentSeq !== undefined && row(s.answer, s.answers(a.amendmentSeq, a.decision ?? '')),
      a.reason !== null && a.reason !== '' && row(s.reason, a.reason),
      a.docs.length > 0 && row(s.attached, a.docs.map((d) => d.originalFileName ?? d.key).join(', ')),
      (a.privateDocuments ?? 0) > 0 && row(s.attached, s.privateDocuments(a.privateDocuments ?? 0)),
      row(s.recordedAt, when(a.createdAt)),
      row(s.actor, s.actors[a.actor ?? 'issuer'] ?? a.actor ?? ''),
      a.consent !== undefined && row(s.consent, s.consents[a.consent] ?? a.consent),
    ),
    a.proof
      ? h(
          'div',
          { class: 'amendment-proof' },
          h('p', { class: ok ? 'banner good' : 'banner bad' }, ok ? s.amendmentNotarized : s.amendmentFailed),
          h('ul', { class: 'checks' }, ...checks.map((c) => checkItem(c, s.amendmentChecks))),
        )
      : a.notarizationReason
        ? h('p', { class: 'banner bad', 'data-blocked': '' }, `${s.amendmentBlocked} `, h('span', { class: 'small' }, a.notarizationReason))
        : h('p', { class: 'banner wait' }, s.amendmentPending),
  );
}

function historyBlock(m: Match, verifiedAt: string): HTMLElement {
  const s = t();
  if (!m.amendments.length) return h('section', { class: 'block' }, h('h4', {}, s.history), h('p', { class: 'muted' }, s.noAmendments));
  const chain = chainChecks(m, verifiedAt);
  const order = chain.filter((c) => c.seq === undefined);
  return h(
    'section',
    { class: 'block history' },
    h('h4', {}, s.history),
    (m.earlierAmendments ?? 0) > 0 &&
      h('p', { class: 'muted', 'data-earlier-amendments': String(m.earlierAmendments) }, s.earlierAmendments(m.earlierAmendments ?? 0)),
    h('ul', { class: 'checks' }, ...order.map((c) => checkItem(c))),
    h('ul', { class: 'amendments', role: 'list' }, ...m.amendments.map((a) => amendmentItem(a, chain))),
  );
}

function documentsBlock(m: Match): HTMLElement {
  const s = t();
  const items = m.documents.map((d) =>
    h(
      'li',
      { class: 'doc' },
      h('p', { class: 'doc-name' }, d.originalFileName ?? d.key, d.type !== null && h('span', { class: 'tag' }, t().acts[d.type] ?? d.type)),
      h(
        'p',
        { class: `status status-${(d.status ?? 'none').replace(/\s+/g, '-').toLowerCase()}` },
        `${s.verdict}: ${d.status === null ? s.none : (s.status[d.status] ?? d.status)}`,
      ),
      d.signature !== null &&
        d.signature.signers.length > 0 &&
        h(
          'ul',
          { class: 'signers', 'aria-label': s.signers },
          ...d.signature.signers.map((g) =>
            h(
              'li',
              { 'data-signer': '' },
              h('span', { class: 'signer-name' }, `${g.counterSignature ? s.counterSigned : s.signedBy} ${g.commonName ?? '?'}`),
              g.signingTime !== null && ` ${s.at} ${when(g.signingTime)}`,
              g.timestampedAt && h('span', { class: 'signer-detail' }, ` · ${s.timestamped} ${when(g.timestampedAt)}`),
              ` · ${g.valid ? s.signatureValid : s.signatureInvalid} · `,
              g.chain === 'trusted' ? s.chainTrusted : g.chain === 'untrusted' ? s.chainUntrusted : s.chainNotChecked,
              // The list's word when there is one; otherwise only what the certificate says of itself.
              g.trustedList
                ? ` · ${g.trustedList.qualified ? s.qualifiedPerList : s.listed} ${g.trustedList.territory} (${g.trustedList.provider})`
                : g.qualified && ` · ${s.qualified}`,
              g.issuer && h('span', { class: 'signer-issuer' }, ` · ${s.issuedBy} ${g.issuer}`),
            ),
          ),
        ),
      h('p', { class: 'checksum' }, `${s.checksum}: `, h('code', { class: 'hash' }, d.checksum ?? s.none)),
    ),
  );
  const hidden = m.privateDocuments ?? 0;
  return h(
    'section',
    { class: 'block' },
    h('h4', {}, s.documents),
    h('ul', { class: 'docs' }, ...items),
    hidden > 0 && h('p', { class: 'muted', 'data-private-documents': String(hidden) }, s.privateDocuments(hidden)),
  );
}

function fileBlock(result: Result): HTMLElement {
  const s = t();
  const input = h('input', { type: 'file', id: 'file-input', class: 'visually-hidden' }) as HTMLInputElement;
  const zone = h('label', { for: 'file-input', class: 'dropzone', id: 'dropzone' }, h('span', { class: 'choose' }, s.choose), h('span', {}, s.fileHelp));
  const out = h('div', { id: 'file-result' });
  if (fileResult) out.append(fileVerdict(fileResult));
  const pick = (file: File | undefined) => {
    if (file) void checkFile(file, result, out);
  };
  input.addEventListener('change', () => pick(input.files?.[0]));
  zone.addEventListener('dragover', (e) => {
    e.preventDefault();
    zone.classList.add('over');
  });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    pick(e.dataTransfer?.files[0]);
  });
  return h('section', { class: 'card', 'aria-labelledby': 'file-title' }, h('h2', { id: 'file-title' }, s.fileCheck), input, zone, out);
}

function fileVerdict(f: NonNullable<typeof fileResult>): HTMLElement {
  const s = t();
  // Documents the issuer keeps private cannot be compared here: a file that matches nothing shown may be one of them.
  const found = last?.kind === 'found' ? last.result.matches : [];
  const hidden = found.reduce((n, m) => n + (m.privateDocuments ?? 0) + m.amendments.reduce((k, a) => k + (a.privateDocuments ?? 0), 0), 0);
  return h(
    'div',
    {
      class: f.matched ? 'banner good' : hidden > 0 ? 'banner wait' : 'banner bad',
      'data-file-match': '',
      'data-matched-key': f.matched?.key ?? '',
      role: 'status',
    },
    h('p', {}, f.matched ? s.fileMatch(f.matched.originalFileName ?? f.matched.key) : hidden > 0 ? s.fileNoMatchPrivate(hidden) : s.fileNoMatch),
    h('p', { class: 'small' }, `${f.name} · ${s.fileHash}: `, h('code', { class: 'hash' }, f.hash)),
  );
}

/** SHA-256 of the file, in this browser: WebCrypto, or the bundled SHA-256 where the page is not a secure context. */
async function fileHash(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (globalThis.crypto?.subtle) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  }
  return sha256Hex(bytes);
}

async function checkFile(file: File, result: Result, out: HTMLElement): Promise<void> {
  out.replaceChildren(h('p', { role: 'status' }, t().hashing));
  const hash = await fileHash(file);
  // The registration's documents, and the amendments' (an appendix received on paper is checked the same way).
  const amendmentDocs = result.matches.flatMap((m) => m.amendments.flatMap((a) => a.docs.map((d) => ({ ...d, status: null, signature: null }))));
  const matched = [...result.matches.flatMap((m) => m.documents), ...amendmentDocs].find((d) => d.checksum === hash);
  fileResult = { name: file.name, hash, matched };
  out.replaceChildren(fileVerdict(fileResult));
}

function receiptBlock(result: Result): HTMLElement {
  const s = t();
  const print = h('button', { type: 'button', class: 'secondary no-print' }, s.print);
  print.addEventListener('click', () => window.print());
  return h(
    'section',
    { class: 'card receipt', 'aria-labelledby': 'receipt-title' },
    h('h2', { id: 'receipt-title' }, s.receipt),
    h('p', {}, s.receiptHelp),
    h(
      'dl',
      { class: 'facts' },
      row(s.verifiedAt, when(result.verifiedAt)),
      ...result.matches.map((m) => row(s.policy, `${m.guarantee.details.policyNumber ?? ''} · ${m.issuer.name}`)),
    ),
    h('pre', { class: 'jws', 'data-receipt': '' }, result.receipt),
    print,
  );
}

function render(): void {
  const outcome = byId<HTMLElement>('outcome');
  const s = t();
  if (!last) {
    outcome.replaceChildren();
    return;
  }
  if (last.kind === 'found') {
    const { result } = last;
    outcome.replaceChildren(
      h(
        'div',
        { 'data-verify-result': '', 'data-status': 'found', class: 'result' },
        h('h2', { id: 'result-title' }, s.found(result.matches.length)),
        result.matches.length > 1 && h('p', { class: 'banner wait' }, s.several),
        ...result.matches.map((m) =>
          h(
            'article',
            { class: 'card match', 'aria-label': m.issuer.name },
            issuerBlock(m),
            stateBlock(m, result.verifiedAt),
            termsBlock(m.guarantee),
            notarizationBlock(m),
            historyBlock(m, result.verifiedAt),
            documentsBlock(m),
          ),
        ),
      ),
      fileBlock(result),
      receiptBlock(result),
    );
    return;
  }
  if (last.kind === 'not-found') {
    outcome.replaceChildren(
      h(
        'div',
        { 'data-verify-result': '', 'data-status': 'not-found', class: 'card result' },
        h('h2', { id: 'result-title' }, s.notFound),
        h('p', {}, s.notFoundHelp),
      ),
    );
    return;
  }
  const message = last.kind === 'limited' ? s.limited(last.seconds) : last.kind === 'invalid' ? s.invalid : s.failed;
  outcome.replaceChildren(h('div', { class: 'card banner bad', role: 'alert' }, message));
}

function applyLanguage(next: Lang): void {
  lang = next;
  document.documentElement.lang = next;
  const s = t() as unknown as Record<string, unknown>;
  for (const el of document.querySelectorAll<HTMLElement>('[data-i18n]')) {
    const value = s[el.dataset.i18n ?? ''];
    if (typeof value === 'string') el.textContent = value;
  }
  document.title = `${t().title} · ${lang === 'it' ? 'Guarantee verification' : 'Verifica di una garanzia'}`;
  for (const b of document.querySelectorAll<HTMLButtonElement>('[data-lang]')) b.setAttribute('aria-pressed', String(b.dataset.lang === next));
  render();
}

/** Parses "15000,50", "15.000,50", "15000.50" as euro; undefined when empty; NaN when not an amount. */
function amountOf(text: string): number | undefined {
  const v = text.trim().replace(/\s/g, '');
  if (!v) return undefined;
  const normalized = /,\d{1,2}$/.test(v) ? v.replace(/\./g, '').replace(',', '.') : v.replace(/,/g, '');
  return /^\d+(\.\d{1,2})?$/.test(normalized) ? Number(normalized) : Number.NaN;
}

let inFlight: AbortController | undefined;

async function submit(): Promise<void> {
  const s = t();
  const error = byId<HTMLElement>('form-error');
  const policyNumber = byId<HTMLInputElement>('policyNumber').value;
  const checkCode = byId<HTMLInputElement>('checkCode').value;
  const cig = byId<HTMLInputElement>('cig').value.trim();
  const amount = amountOf(byId<HTMLInputElement>('garantedAmount').value);
  error.hidden = true;
  if (!policyNumber || !checkCode) {
    error.textContent = s.required;
    error.hidden = false;
    return;
  }
  if (Number.isNaN(amount)) {
    error.textContent = s.badAmount;
    error.hidden = false;
    return;
  }

  inFlight?.abort();
  const controller = new AbortController();
  inFlight = controller;
  fileResult = undefined;
  byId<HTMLElement>('outcome').replaceChildren(h('p', { class: 'card', role: 'status' }, s.verifying));
  let outcome: Outcome;
  try {
    const res = await fetch('/api/public/v1/verifications', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      signal: controller.signal,
      body: JSON.stringify({ policyNumber, checkCode, ...(cig && { cig }), ...(amount !== undefined && { garantedAmount: amount }) }),
    });
    if (res.status === 200) outcome = { kind: 'found', result: (await res.json()) as Result };
    else if (res.status === 404) outcome = { kind: 'not-found' };
    else if (res.status === 429) outcome = { kind: 'limited', seconds: Number(res.headers.get('Retry-After')) || 60 };
    else if (res.status === 400 || res.status === 413) outcome = { kind: 'invalid' };
    else outcome = { kind: 'failed' };
  } catch (err) {
    if ((err as Error).name === 'AbortError') return;
    outcome = { kind: 'failed' };
  }
  if (inFlight !== controller) return;
  last = outcome;
  render();
  byId<HTMLElement>('outcome').focus();
}

/** Fills the form from the URL fragment (#policyNumber=...&checkCode=..., the QR code's) and verifies. */
function fromFragment(): void {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  const policyNumber = params.get('policyNumber');
  const checkCode = params.get('checkCode');
  if (!policyNumber || !checkCode) return;
  byId<HTMLInputElement>('policyNumber').value = policyNumber;
  byId<HTMLInputElement>('checkCode').value = checkCode;
  byId<HTMLInputElement>('cig').value = params.get('cig') ?? '';
  byId<HTMLInputElement>('garantedAmount').value = params.get('garantedAmount') ?? '';
  void submit();
}

function start(): void {
  const requested = new URLSearchParams(location.search).get('lang');
  byId<HTMLFormElement>('verify-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void submit();
  });
  for (const b of document.querySelectorAll<HTMLButtonElement>('[data-lang]'))
    b.addEventListener('click', () => applyLanguage(b.dataset.lang === 'en' ? 'en' : 'it'));
  window.addEventListener('hashchange', fromFragment);
  applyLanguage(requested === 'en' ? 'en' : 'it');
  fromFragment();
}

start();
