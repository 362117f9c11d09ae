// The /authority pages' HTML, rendered by the server (no script: they work on any phone, with a
// screen reader, and from one origin), Italian first with English. Every interpolated value is
// escaped unless it is markup built here (Raw).
import { AMENDMENT_LABELS } from '../../guarantees/amendment-labels.js';
import type { AuthorityGuaranteeView } from '../authority.schemas.js';

export type Lang = 'it' | 'en';

/** The statuses the list may be filtered by. */
const STATUSES = ['ACTIVE', 'PARTIALLY_RELEASED', 'CLAIMED', 'EXPIRED', 'RELEASED', 'CANCELLED'] as const;

export class Raw {
  constructor(readonly html: string) {}
}

type Part = string | number | Raw | null | undefined | false | readonly Part[];

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const out = (p: Part): string => {
  if (p === null || p === undefined || p === false) return '';
  if (p instanceof Raw) return p.html;
  if (typeof p === 'string') return esc(p);
  if (typeof p === 'number') return String(p);
  return p.map(out).join('');
};

/** Markup with every value escaped. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Raw {
  return new Raw(strings.reduce((acc, s, i) => acc + s + (i < values.length ? out(values[i]) : ''), ''));
}

const STRINGS = {
  it: {
    brand: 'Registro delle garanzie',
    area: 'Area delle stazioni appaltanti',
    other: 'English',
    otherLang: 'en',
    skip: 'Vai al contenuto',
    signInTitle: 'Accesso delle stazioni appaltanti',
    signInLead:
      'Accedi con la tua identità digitale (SPID o CIE) per prendere in carico le garanzie delle tue gare, escuterle, rispondere alle modifiche che riducono la copertura e svincolarle.',
    signIn: 'Accedi con SPID o CIE',
    notConfigured: "L'accesso non è configurato su questo registro.",
    signedInAs: 'Accesso come',
    logout: 'Esci',
    noAccess: 'Nessun accesso',
    noAccessLead:
      'La tua identità (codice fiscale {code}) non è abilitata per alcuna stazione appaltante di questo registro. Chiedi al gestore del registro di abilitarti; finché non lo fa non puoi vedere né fare nulla qui.',
    guarantees: 'Le garanzie prese in carico',
    all: 'Tutte',
    filterBy: 'Filtra per stato',
    none: 'Nessuna garanzia presa in carico finora.',
    policy: 'Polizza',
    issuer: 'Emittente',
    status: 'Stato',
    amount: 'Importo garantito',
    expiry: 'Scadenza',
    daysLeft: 'giorni al termine di pagamento',
    dayLeft: 'giorno al termine di pagamento',
    overdue: 'termine di pagamento scaduto',
    pendingBadge: 'Modifica da approvare',
    takeCharge: 'Prendi in carico una garanzia',
    takeChargeLead: 'Con i dati della gara e della garanzia: numero di polizza, codice di verifica, CIG e importo garantito.',
    policyNumber: 'Numero di polizza',
    checkCode: 'Codice di verifica',
    cig: 'CIG',
    garantedAmount: 'Importo garantito (euro)',
    takeChargeButton: 'Prendi in carico',
    previous: 'Più recenti',
    next: 'Meno recenti',
    back: 'Tutte le garanzie',
    today: 'Che cosa copre oggi',
    openDemand: 'Escussione aperta',
    claimDue: "Termine di pagamento dell'emittente",
    scheduled: 'In vigore più avanti',
    from: 'dal',
    history: 'Storia della garanzia',
    documents: 'Documenti',
    noDocuments: 'Nessun documento.',
    recordedBy: { issuer: "dall'emittente", authority: 'dalla stazione appaltante' } as Record<string, string>,
    consent: { PENDING: 'attende il vostro consenso', ACCEPTED: 'approvata', REFUSED: 'respinta' } as Record<string, string>,
    pendingTitle: 'Una modifica attende il vostro consenso',
    pendingLead: "L'emittente ha registrato una modifica che riduce la vostra copertura: non ha effetto finché non la approvate.",
    accept: 'Approva',
    refuse: 'Respingi',
    reason: 'Motivo',
    demandTitle: 'Escuti la garanzia',
    demandLead:
      "La richiesta è datata dal registro al momento della ricezione: da quel momento l'emittente ha 15 giorni per pagare (art. 117 c.7 D.Lgs. 36/2023).",
    claimedAmount: 'Importo richiesto (euro)',
    document: 'Documento (PDF o firmato .p7m)',
    demandButton: 'Escuti',
    withdrawTitle: "Ritira l'escussione",
    withdrawButton: "Ritira l'escussione",
    releaseTitle: 'Svincola la garanzia',
    releaseLead: 'Svincolo totale, o parziale indicando il nuovo importo garantito.',
    releaseKind: 'Svincolo',
    releaseAll: 'Totale',
    releasePart: 'Parziale',
    newAmount: 'Nuovo importo garantito (euro, solo per lo svincolo parziale)',
    effectiveAt: 'Con effetto dal',
    releaseButton: 'Svincola',
    done: {
      BENEFICIARY_LINKED: 'Garanzia presa in carico.',
      DEMAND: 'Escussione registrata.',
      DEMAND_WITHDRAWN: 'Escussione ritirata.',
      AMENDMENT_RESPONSE: 'Risposta registrata.',
      RELEASE: 'Svincolo registrato.',
      PARTIAL_RELEASE: 'Svincolo parziale registrato.',
    } as Record<string, string>,
    errorTitle: 'Non è stato possibile',
    sessionEnded: 'La sessione è scaduta: accedi di nuovo.',
    statusText: {
      ACTIVE: 'In vigore',
      PARTIALLY_RELEASED: 'In vigore, parzialmente svincolata',
      CLAIMED: 'Escussa',
      EXPIRED: 'Scaduta',
      RELEASED: 'Svincolata',
      CANCELLED: 'Annullata',
    } as Record<string, string>,
    types: AMENDMENT_LABELS.it as Record<string, string>,
    decisions: { ACCEPT: 'approvata', REFUSE: 'respinta' } as Record<string, string>,
    fileStatus: 'esito dei controlli',
  },
  en: {
    brand: 'Guarantee Registry',
    area: "Contracting authorities' area",
    other: 'Italiano',
    otherLang: 'it',
    skip: 'Skip to content',
    signInTitle: 'Sign-in for contracting authorities',
    signInLead:
      "Sign in with your digital identity (SPID or CIE) to take charge of your tenders' guarantees, demand payment, answer changes that reduce your cover, and release them.",
    signIn: 'Sign in with SPID or CIE',
    notConfigured: 'Sign-in is not configured on this registry.',
    signedInAs: 'Signed in as',
    logout: 'Sign out',
    noAccess: 'No access',
    noAccessLead:
      "Your identity (fiscal code {code}) is not enabled for any contracting authority of this registry. Ask the registry's operator to enable you; until then you can neither see nor do anything here.",
    guarantees: 'The guarantees you took charge of',
    all: 'All',
    filterBy: 'Filter by status',
    none: 'No guarantee taken charge of yet.',
    policy: 'Policy',
    issuer: 'Issuer',
    status: 'Status',
    amount: 'Amount guaranteed',
    expiry: 'Expiry',
    daysLeft: 'days to the payment deadline',
    dayLeft: 'day to the payment deadline',
    overdue: 'payment deadline passed',
    pendingBadge: 'Change awaiting your consent',
    takeCharge: 'Take charge of a guarantee',
    takeChargeLead: "With the tender's and the guarantee's data: policy number, verification code, CIG and amount guaranteed.",
    policyNumber: 'Policy number',
    checkCode: 'Verification code',
    cig: 'CIG',
    garantedAmount: 'Amount guaranteed (euro)',
    takeChargeButton: 'Take charge',
    previous: 'Newer',
    next: 'Older',
    back: 'All guarantees',
    today: 'What it covers today',
    openDemand: 'Open demand',
    claimDue: "The issuer's payment deadline",
    scheduled: 'In effect later',
    from: 'from',
    history: "The guarantee's history",
    documents: 'Documents',
    noDocuments: 'No documents.',
    recordedBy: { issuer: 'by the issuer', authority: 'by the contracting authority' } as Record<string, string>,
    consent: { PENDING: 'awaits your consent', ACCEPTED: 'accepted', REFUSED: 'refused' } as Record<string, string>,
    pendingTitle: 'A change awaits your consent',
    pendingLead: 'The issuer recorded a change that reduces your cover: it has no effect until you accept it.',
    accept: 'Accept',
    refuse: 'Refuse',
    reason: 'Reason',
    demandTitle: 'Demand payment',
    demandLead: 'The registry dates the demand when it receives it: from then the issuer has 15 days to pay (art. 117 c.7 D.Lgs. 36/2023).',
    claimedAmount: 'Amount demanded (euro)',
    document: 'Document (PDF or signed .p7m)',
    demandButton: 'Demand payment',
    withdrawTitle: 'Withdraw the demand',
    withdrawButton: 'Withdraw the demand',
    releaseTitle: 'Release the guarantee',
    releaseLead: 'In full, or in part by giving the new amount guaranteed.',
    releaseKind: 'Release',
    releaseAll: 'In full',
    releasePart: 'In part',
    newAmount: 'New amount guaranteed (euro, for a partial release only)',
    effectiveAt: 'In effect from',
    releaseButton: 'Release',
    done: {
      BENEFICIARY_LINKED: 'Guarantee taken charge of.',
      DEMAND: 'Demand recorded.',
      DEMAND_WITHDRAWN: 'Demand withdrawn.',
      AMENDMENT_RESPONSE: 'Answer recorded.',
      RELEASE: 'Release recorded.',
      PARTIAL_RELEASE: 'Partial release recorded.',
    } as Record<string, string>,
    errorTitle: 'That could not be done',
    sessionEnded: 'Your session ended: sign in again.',
    statusText: {
      ACTIVE: 'Active',
      PARTIALLY_RELEASED: 'Active, partly released',
      CLAIMED: 'Claimed',
      EXPIRED: 'Expired',
      RELEASED: 'Released',
      CANCELLED: 'Cancelled',
    } as Record<string, string>,
    types: AMENDMENT_LABELS.en as Record<string, string>,
    decisions: { ACCEPT: 'accepted', REFUSE: 'refused' } as Record<string, string>,
    fileStatus: 'checks',
  },
};

export type Strings = (typeof STRINGS)['it'];
export const stringsOf = (lang: Lang): Strings => STRINGS[lang];

const locale = (lang: Lang) => (lang === 'it' ? 'it-IT' : 'en-GB');
export const euro = (lang: Lang, n: number | null | undefined) =>
  n === null || n === undefined ? '—' : new Intl.NumberFormat(locale(lang), { style: 'currency', currency: 'EUR' }).format(n);
export const day = (lang: Lang, iso: string | null | undefined) =>
  iso ? new Intl.DateTimeFormat(locale(lang), { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'Europe/Rome' }).format(new Date(iso)) : '—';
const moment = (lang: Lang, iso: string) =>
  new Intl.DateTimeFormat(locale(lang), { dateStyle: 'medium', timeStyle: 'short', timeZone: 'Europe/Rome' }).format(new Date(iso));

/** Whole days from `now` to `due`, rounded up (0 on its last day, negative once passed). */
export const daysLeft = (due: string, now: Date) => Math.ceil((Date.parse(due) - now.getTime()) / 86_400_000);

export interface Frame {
  lang: Lang;
  /** The page's own path and query, for the language switch. */
  path: string;
  title: string;
  /** Signed in: the person and the logout form's CSRF token. */
  person?: { name: string; csrf: string };
}

/** The page around `main`. */
export function page(f: Frame, main: Raw): string {
  const s = stringsOf(f.lang);
  const target = new URL(f.path, 'http://page.invalid');
  target.searchParams.set('lang', s.otherLang);
  const switchTo = `${target.pathname}${target.search}`;
  return `<!doctype html>${
    html`<html lang="${f.lang}">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${f.title} · ${s.brand}</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="/authority/app.css" />
      </head>
      <body>
        <a class="skip" href="#main">${s.skip}</a>
        <header class="top">
          <div class="wrap">
            <p class="brand">${s.brand}<span class="area"> · ${s.area}</span></p>
            <nav class="tools">
              <a class="lang" href="${switchTo}" hreflang="${s.otherLang}" lang="${s.otherLang}">${s.other}</a> ${
                f.person &&
                html`<form method="post" action="/authority/logout" class="logout">
                  <input type="hidden" name="csrf" value="${f.person.csrf}" /> <span class="who">${s.signedInAs} <strong>${f.person.name}</strong></span>
                  <button type="submit" class="link">${s.logout}</button>
                </form>`
              }
            </nav>
          </div>
        </header>
        <main id="main" class="wrap" tabindex="-1">${main}</main>
      </body>
    </html>`.html
  }`;
}

export function notice(kind: 'good' | 'bad', text: string | undefined): Raw | false {
  return !!text && html`<p class="banner ${kind}" role="${kind === 'bad' ? 'alert' : 'status'}" data-notice="${kind}">${text}</p>`;
}

export function signInPage(lang: Lang, enabled: boolean, message?: string): Raw {
  const s = stringsOf(lang);
  return html`<h1>${s.signInTitle}</h1>
    <p class="lead">${s.signInLead}</p>
    ${notice('bad', message)}
    ${enabled ? html`<p><a class="button primary" href="/authority/login" data-sign-in>${s.signIn}</a></p>` : html`<p class="banner wait">${s.notConfigured}</p>`}`;
}

export function noAccessPage(lang: Lang, fiscalNumber: string): Raw {
  const s = stringsOf(lang);
  return html`<h1>${s.noAccess}</h1>
    <p class="banner wait" data-no-access>${s.noAccessLead.replace('{code}', fiscalNumber)}</p>`;
}

interface ListItem {
  guaranteeId: string;
  issuer: { name: string };
  policyNumber: string | null;
  cig: string | null;
  state: { status: string; garantedAmount: number | null; expiresAt: string | null; claimDueAt: string | null; pendingConsent: unknown };
}

/** The authority's guarantees, and the form to take charge of one. */
export function listPage(
  lang: Lang,
  d: {
    items: ListItem[];
    total: number;
    page: number;
    pages: number;
    csrf: string;
    now: Date;
    /** The status the list is filtered by, if any. */
    status?: string;
    error?: string;
    form?: Record<string, string>;
  },
): Raw {
  const s = stringsOf(lang);
  const rows = d.items.map((g) => {
    const left = g.state.claimDueAt ? daysLeft(g.state.claimDueAt, d.now) : undefined;
    return html`<li
      class="item"
      data-guarantee-row="${g.guaranteeId}"
      data-status="${g.state.status}"
      ${left !== undefined && new Raw(` data-days-left="${left}"`)}${!!g.state.pendingConsent && new Raw(' data-amendment-pending')}
    >
      <a class="title" href="/authority/guarantees/${g.guaranteeId}">${s.policy} ${g.policyNumber ?? '—'}</a>
      <span class="status ${tone(g.state.status)}">${s.statusText[g.state.status] ?? g.state.status}</span>
      ${left !== undefined && html`<span class="due ${left < 0 ? 'bad' : 'wait'}">${left < 0 ? s.overdue : `${left} ${left === 1 ? s.dayLeft : s.daysLeft}`}</span>`}
      ${!!g.state.pendingConsent && html`<span class="pending">${s.pendingBadge}</span>`}
      <dl class="facts">
        <div>
          <dt>${s.issuer}</dt>
          <dd>${g.issuer.name}</dd>
        </div>
        <div>
          <dt>${s.cig}</dt>
          <dd>${g.cig ?? '—'}</dd>
        </div>
        <div>
          <dt>${s.amount}</dt>
          <dd>${euro(lang, g.state.garantedAmount)}</dd>
        </div>
        <div>
          <dt>${s.expiry}</dt>
          <dd>${day(lang, g.state.expiresAt)}</dd>
        </div>
      </dl>
    </li>`;
  });
  const f = d.form ?? {};
  const filter = d.status ? `&status=${d.status}` : '';
  const filters = html`<nav class="filters" aria-label="${s.filterBy}">
    ${[undefined, ...STATUSES].map(
      (st) =>
        html`<a href="/authority${st ? `?status=${st}` : ''}" ${st === d.status && new Raw(' aria-current="page"')} data-filter="${st ?? 'ALL'}"
          >${st ? (s.statusText[st] ?? st) : s.all}</a
        >`,
    )}
  </nav>`;
  return html`<h1>${s.guarantees}</h1>
    ${filters}
    ${
      d.items.length
        ? html`<ul class="list" data-total="${d.total}">
            ${rows}
          </ul>`
        : html`<p class="muted">${s.none}</p>`
    }
    ${
      d.pages > 1 &&
      html`<nav class="pager">
        ${d.page > 1 && html`<a href="/authority?page=${d.page - 1}${filter}">${s.previous}</a>`} <span>${d.page} / ${d.pages}</span> ${
          d.page < d.pages && html`<a href="/authority?page=${d.page + 1}${filter}">${s.next}</a>`
        }
      </nav>`
    }
    <section class="card" aria-labelledby="take-charge">
      <h2 id="take-charge">${s.takeCharge}</h2>
      <p class="lead">${s.takeChargeLead}</p>
      ${notice('bad', d.error)}
      <form method="post" action="/authority/guarantees" data-form="take-charge">
        <input type="hidden" name="csrf" value="${d.csrf}" />
        ${field('policyNumber', s.policyNumber, f.policyNumber)}${field('checkCode', s.checkCode, f.checkCode)}${field('cig', s.cig, f.cig)}${field(
          'garantedAmount',
          s.garantedAmount,
          f.garantedAmount,
          'inputmode="decimal"',
        )}
        <button type="submit" class="primary">${s.takeChargeButton}</button>
      </form>
    </section>`;
}

function field(name: string, label: string, value = '', attrs = '', type = 'text'): Raw {
  return html`<div class="field">
    <label for="${name}">${label}</label><input id="${name}" name="${name}" type="${type}" value="${value}" ${new Raw(attrs)} required />
  </div>`;
}

const tone = (status: string) => (status === 'ACTIVE' || status === 'PARTIALLY_RELEASED' ? 'good' : status === 'CLAIMED' ? 'wait' : 'bad');

/** A guarantee the authority took charge of: today's cover, what it may do, its history and documents. */
export function guaranteePage(lang: Lang, v: AuthorityGuaranteeView, d: { csrf: string; now: Date; done?: string; error?: string }): Raw {
  const s = stringsOf(lang);
  const st = v.state;
  const id = v.guarantee.id;
  const left = st.claimDueAt ? daysLeft(st.claimDueAt, d.now) : undefined;
  const ended = st.status === 'RELEASED' || st.status === 'CANCELLED';
  const csrf = html`<input type="hidden" name="csrf" value="${d.csrf}" /><input type="hidden" name="expectedSeq" value="${st.lastSeq}" />`;
  const pending = st.pendingConsent && v.amendments.find((a) => a.seq === st.pendingConsent?.seq);
  const docs = [
    ...v.documents.map((doc) => ({ key: doc.key, originalFileName: doc.originalFileName, checksum: doc.checksum, status: doc.status, seq: undefined })),
    ...v.amendments.flatMap((a) =>
      a.docs.map((doc) => ({ key: doc.key, originalFileName: doc.originalFileName, checksum: doc.checksum, status: null, seq: a.seq })),
    ),
  ];
  return html`<p><a href="/authority">← ${s.back}</a></p>
    <h1>${s.policy} ${v.guarantee.details.policyNumber ?? '—'}</h1>
    <p class="lead">${s.issuer}: <strong>${v.issuer.name}</strong>${v.guarantee.details.cig && ` · CIG ${v.guarantee.details.cig}`}</p>
    ${notice('good', d.done !== undefined && Object.hasOwn(s.done, d.done) ? s.done[d.done] : undefined)}${notice('bad', d.error)}
    <section class="card" data-guarantee-state="${st.status}" ${left !== undefined && new Raw(` data-days-left="${left}"`)}>
      <h2>${s.today}</h2>
      <p class="banner ${tone(st.status)}">${s.statusText[st.status] ?? st.status}</p>
      <dl class="facts">
        <div>
          <dt>${s.amount}</dt>
          <dd>${euro(lang, st.garantedAmount)}</dd>
        </div>
        <div>
          <dt>${s.expiry}</dt>
          <dd>${day(lang, st.expiresAt)}</dd>
        </div>
        ${
          st.openClaim &&
          html`<div>
            <dt>${s.openDemand}</dt>
            <dd>${euro(lang, st.openClaim.claimedAmount)}, ${day(lang, st.openClaim.effectiveAt)}</dd>
          </div>`
        }
        ${
          st.claimDueAt &&
          left !== undefined &&
          html`<div>
            <dt>${s.claimDue}</dt>
            <dd>${day(lang, st.claimDueAt)} (${left < 0 ? s.overdue : `${left} ${left === 1 ? s.dayLeft : s.daysLeft}`})</dd>
          </div>`
        }
        ${st.scheduled.map(
          (a) =>
            html`<div data-scheduled="${a.seq}">
              <dt>${s.scheduled}</dt>
              <dd>${a.seq}. ${s.types[a.type] ?? a.type}, ${s.from} ${day(lang, a.effectiveAt)}</dd>
            </div>`,
        )}
      </dl>
    </section>
    ${
      pending &&
      html`<section class="card attention" data-amendment-pending="${pending.seq}">
        <h2>${s.pendingTitle}</h2>
        <p>${s.pendingLead}</p>
        <p>
          <strong>${pending.seq}. ${s.types[pending.type] ?? pending.type}</strong
          >${pending.garantedAmount !== undefined && html` · ${euro(lang, pending.garantedAmount)}`} · ${s.from}
          ${day(lang, pending.effectiveAt)}${pending.reason && html` · ${pending.reason}`}
        </p>
        <form method="post" action="/authority/guarantees/${id}/answer" data-form="answer">
          ${csrf}<input type="hidden" name="amendmentSeq" value="${pending.seq}" />
          <div class="field"><label for="answer-reason">${s.reason}</label><input id="answer-reason" name="reason" /></div>
          <div class="buttons">
            <button type="submit" name="decision" value="ACCEPT" class="primary">${s.accept}</button
            ><button type="submit" name="decision" value="REFUSE" class="secondary">${s.refuse}</button>
          </div>
        </form>
      </section>`
    }
    ${
      !ended &&
      !st.openClaim &&
      html`<section class="card" aria-labelledby="demand">
        <h2 id="demand">${s.demandTitle}</h2>
        <p class="lead">${s.demandLead}</p>
        <form method="post" action="/authority/guarantees/${id}/demand" enctype="multipart/form-data" data-form="demand">
          ${csrf} ${field('claimedAmount', s.claimedAmount, '', 'inputmode="decimal"')}
          <div class="field"><label for="demand-reason">${s.reason}</label><input id="demand-reason" name="reason" required /></div>
          <div class="field">
            <label for="document">${s.document}</label><input id="document" name="document" type="file" accept=".pdf,.p7m,application/pdf" />
          </div>
          <button type="submit" class="primary danger">${s.demandButton}</button>
        </form>
      </section>`
    }
    ${
      st.openClaim &&
      html`<section class="card">
        <h2>${s.withdrawTitle}</h2>
        <form method="post" action="/authority/guarantees/${id}/withdraw" data-form="withdraw">
          ${csrf}
          <div class="field"><label for="withdraw-reason">${s.reason}</label><input id="withdraw-reason" name="reason" /></div>
          <button type="submit" class="secondary">${s.withdrawButton}</button>
        </form>
      </section>`
    }
    ${
      !ended &&
      html`<section class="card" aria-labelledby="release">
        <h2 id="release">${s.releaseTitle}</h2>
        <p class="lead">${s.releaseLead}</p>
        <form method="post" action="/authority/guarantees/${id}/release" data-form="release">
          ${csrf}
          <fieldset class="field">
            <legend>${s.releaseKind}</legend>
            <label class="choice"><input type="radio" name="type" value="RELEASE" checked /> ${s.releaseAll}</label>
            <label class="choice"><input type="radio" name="type" value="PARTIAL_RELEASE" /> ${s.releasePart}</label>
          </fieldset>
          <div class="field"><label for="release-amount">${s.newAmount}</label><input id="release-amount" name="garantedAmount" inputmode="decimal" /></div>
          <div class="field">
            <label for="release-date">${s.effectiveAt}</label
            ><input
              id="release-date"
              name="effectiveAt"
              type="date"
              value="${new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Rome' }).format(d.now)}"
              required
            />
          </div>
          <div class="field"><label for="release-reason">${s.reason}</label><input id="release-reason" name="reason" /></div>
          <button type="submit" class="secondary">${s.releaseButton}</button>
        </form>
      </section>`
    }
    <section class="card">
      <h2>${s.history}</h2>
      <ol class="history">
        ${v.amendments.map(
          (a) =>
            html`<li data-amendment data-seq="${a.seq}" data-type="${a.type}" data-actor="${a.actor ?? 'issuer'}">
              <strong>${a.seq}. ${s.types[a.type] ?? a.type}</strong> · ${moment(lang, a.createdAt)} · ${s.recordedBy[a.actor ?? 'issuer']}
              ${a.consent && html` · <span class="consent ${a.consent}">${s.consent[a.consent]}</span>`}${
                a.decision && html` · ${a.amendmentSeq}: ${s.decisions[a.decision]}`
              }${a.garantedAmount !== undefined && html` · ${euro(lang, a.garantedAmount)}`}${a.claimedAmount !== undefined && html` · ${euro(lang, a.claimedAmount)}`}${
                a.reason && html`<br /><span class="muted">${a.reason}</span>`
              }
            </li>`,
        )}
      </ol>
    </section>
    <section class="card">
      <h2>${s.documents}</h2>
      ${
        docs.length
          ? html`<ul class="docs">
              ${docs.map(
                (doc) =>
                  html`<li data-document="${doc.key}">
                    ${doc.originalFileName ?? doc.key}${doc.seq !== undefined && ` (${doc.seq})`}${
                      doc.status && html` · ${s.fileStatus}: ${doc.status}`
                    }${doc.checksum && html`<br /><code class="hash">${doc.checksum}</code>`}
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">${s.noDocuments}</p>`
      }
    </section>`;
}
