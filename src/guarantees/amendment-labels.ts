// What each amendment type is called, in Italian and English: the /verify page (a browser
// bundle) and the /authority pages (rendered by the server) name them alike. Pure data.
import type { AmendmentType } from './amendments.js';

export const AMENDMENT_LABELS: Record<'it' | 'en', Record<AmendmentType, string>> = {
  it: {
    EXTENSION: 'Proroga',
    AMOUNT_CHANGE: "Variazione dell'importo",
    PARTIAL_RELEASE: 'Svincolo parziale',
    RELEASE: 'Svincolo',
    CLAIM: 'Escussione',
    CLAIM_SETTLED: 'Escussione pagata',
    CLAIM_REJECTED: 'Escussione respinta',
    CANCELLATION: 'Annullamento',
    BENEFICIARY_LINKED: 'Presa in carico della stazione appaltante',
    DEMAND: 'Escussione della stazione appaltante',
    DEMAND_WITHDRAWN: 'Escussione ritirata',
    AMENDMENT_RESPONSE: 'Risposta della stazione appaltante',
  },
  en: {
    EXTENSION: 'Extension',
    AMOUNT_CHANGE: 'Amount change',
    PARTIAL_RELEASE: 'Partial release',
    RELEASE: 'Release',
    CLAIM: 'Claim',
    CLAIM_SETTLED: 'Claim paid',
    CLAIM_REJECTED: 'Claim rejected',
    CANCELLATION: 'Cancellation',
    BENEFICIARY_LINKED: 'Taken charge of by the contracting authority',
    DEMAND: "The contracting authority's demand for payment",
    DEMAND_WITHDRAWN: 'Demand withdrawn',
    AMENDMENT_RESPONSE: "The contracting authority's answer",
  },
};
