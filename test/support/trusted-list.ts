// Trusted lists (ETSI TS 119 612) built and signed at test time, as a member state's operator
// publishes them: one provider with its services, their certificates, statuses and histories, and
// an enveloped XMLDSig signature (exclusive C14N, RSA-SHA256) made with xml-crypto.
import { X509Certificate } from 'node:crypto';
import { SignedXml } from 'xml-crypto';
import { ecdsaAlgorithm } from '../../src/files/trust/trusted-list.js';

export const STATUS = 'http://uri.etsi.org/TrstSvc/TrustedList/Svcstatus/';
export const CA_QC = 'http://uri.etsi.org/TrstSvc/Svctype/CA/QC';
export const TSA_QTST = 'http://uri.etsi.org/TrstSvc/Svctype/TSA/QTST';
const TSL = 'http://uri.etsi.org/02231/v2#';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';

export interface ServiceOptions {
  /** The service's certificate (PEM). */
  certPem: string;
  /** Default CA/QC. */
  type?: string;
  name?: string;
  status: string;
  statusFrom: string;
  /** Earlier statuses. */
  history?: Array<{ status: string; from: string }>;
}

export interface ListOptions {
  services: ServiceOptions[];
  /** Default IT. */
  territory?: string;
  /** Default 42. */
  sequence?: number;
  /** Default EUgeneric (a member state's list). */
  listType?: string;
  /** Default 2100-01-01T00:00:00Z (a list kept up to date). */
  nextUpdate?: string;
  /** Default now (its operator's certificate must have been valid then). */
  issued?: string;
}

const name = (s: ServiceOptions) => s.name ?? 'Test QC CA';

function serviceXml(s: ServiceOptions): string {
  const der = new X509Certificate(s.certPem).raw.toString('base64');
  const type = s.type ?? CA_QC;
  const identity = `<tsl:ServiceDigitalIdentity><tsl:DigitalId><tsl:X509Certificate>${der}</tsl:X509Certificate></tsl:DigitalId></tsl:ServiceDigitalIdentity>`;
  const history = (s.history ?? [])
    .map(
      (h) =>
        `<tsl:ServiceHistoryInstance><tsl:ServiceTypeIdentifier>${type}</tsl:ServiceTypeIdentifier>` +
        `<tsl:ServiceName><tsl:Name xml:lang="en">${name(s)}</tsl:Name></tsl:ServiceName>${identity}` +
        `<tsl:ServiceStatus>${h.status}</tsl:ServiceStatus><tsl:StatusStartingTime>${h.from}</tsl:StatusStartingTime></tsl:ServiceHistoryInstance>`,
    )
    .join('');
  return `<tsl:TSPService><tsl:ServiceInformation>
<tsl:ServiceTypeIdentifier>${type}</tsl:ServiceTypeIdentifier><tsl:ServiceName><tsl:Name xml:lang="en">${name(s)}</tsl:Name></tsl:ServiceName>
${identity}
<tsl:ServiceStatus>${s.status}</tsl:ServiceStatus><tsl:StatusStartingTime>${s.statusFrom}</tsl:StatusStartingTime>
<tsl:ServiceInformationExtensions><tsl:Extension Critical="false"><tsl:AdditionalServiceInformation><tsl:URI xml:lang="en">http://uri.etsi.org/TrstSvc/TrustedList/SvcInfoExt/ForeSignatures</tsl:URI></tsl:AdditionalServiceInformation></tsl:Extension></tsl:ServiceInformationExtensions>
</tsl:ServiceInformation>${history ? `<tsl:ServiceHistory>${history}</tsl:ServiceHistory>` : ''}</tsl:TSPService>`;
}

export function trustedListXml(o: ListOptions): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<tsl:TrustServiceStatusList xmlns:tsl="${TSL}" xmlns:ds="${DS}" TSLTag="http://uri.etsi.org/19612/TSLTag" Id="tsl-1">
<tsl:SchemeInformation><tsl:TSLVersionIdentifier>5</tsl:TSLVersionIdentifier><tsl:TSLSequenceNumber>${o.sequence ?? 42}</tsl:TSLSequenceNumber>
<tsl:TSLType>${o.listType ?? 'http://uri.etsi.org/TrstSvc/TrustedList/TSLType/EUgeneric'}</tsl:TSLType>
<tsl:SchemeOperatorName><tsl:Name xml:lang="it">Agenzia di prova</tsl:Name></tsl:SchemeOperatorName>
<tsl:SchemeTerritory>${o.territory ?? 'IT'}</tsl:SchemeTerritory><tsl:ListIssueDateTime>${o.issued ?? `${new Date().toISOString().slice(0, 19)}Z`}</tsl:ListIssueDateTime>
<tsl:NextUpdate><tsl:dateTime>${o.nextUpdate ?? '2100-01-01T00:00:00Z'}</tsl:dateTime></tsl:NextUpdate></tsl:SchemeInformation>
<tsl:TrustServiceProviderList><tsl:TrustServiceProvider>
<tsl:TSPInformation><tsl:TSPName><tsl:Name xml:lang="it">Certificatore di prova S.p.A.</tsl:Name></tsl:TSPName></tsl:TSPInformation>
<tsl:TSPServices>${o.services.map(serviceXml).join('')}</tsl:TSPServices>
</tsl:TrustServiceProvider></tsl:TrustServiceProviderList>
</tsl:TrustServiceStatusList>`;
}

/** The list signed by its operator: the signature the last child of the root, over the whole list (URI=""); RSA-SHA256 unless named. */
export function signTrustedList(
  xml: string,
  keyPem: string,
  certPem: string,
  signatureAlgorithm = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  reference: 'empty' | 'id' = 'empty',
): string {
  const sig = new SignedXml({ privateKey: keyPem, publicCert: certPem, signatureAlgorithm, canonicalizationAlgorithm: EXC_C14N });
  sig.SignatureAlgorithms = { ...sig.SignatureAlgorithms, 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384': ecdsaAlgorithm('sha384') };
  // URI="" or, as some member states sign, URI="#<the root's Id>".
  sig.addReference({
    xpath: '/*',
    isEmptyUri: reference === 'empty',
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', EXC_C14N],
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  sig.computeSignature(xml, { prefix: 'ds', attrs: { Id: 'sig-1' }, existingPrefixes: { ds: DS }, location: { reference: '/*', action: 'append' } });
  return sig.getSignedXml();
}
