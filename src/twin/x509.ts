import { generateKeyPairSync, KeyObject, randomBytes, sign } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AlgorithmIdentifier, AttributeTypeAndValue, AttributeValue, BasicConstraints, Certificate, ExtendedKeyUsage, Extension, Extensions,
  id_ce_basicConstraints, id_ce_extKeyUsage, id_ce_keyUsage, id_kp_clientAuth, id_kp_serverAuth, KeyUsage, KeyUsageFlags, Name,
  RelativeDistinguishedName, SubjectPublicKeyInfo, TBSCertificate, Validity, Version,
} from '@peculiar/asn1-x509';

/**
 * X.509 certificates the test bed issues itself (Node's crypto parses certificates but issues none): a CA and the
 * certificates it signs, ECDSA P-256 with SHA-256, their ASN.1 written by @peculiar/asn1-x509 (RFC 5280's
 * structures) and signed by Node. What kubeadm makes for a control plane's front
 * proxy (control-plane.ts) is what this serves; nothing else of the toolkit issues certificates.
 */

/** A certificate and its private key, both PEM. */
export interface IssuedCertificate {
  readonly cert: string;
  readonly key: string;
  /** @internal the key, for signing what this CA issues */
  readonly keyObject: KeyObject;
  /** @internal the subject's DER, the issuer of what this CA issues */
  readonly subject: Buffer;
}

export interface CertificateRequest {
  readonly commonName: string;
  /** A CA (basicConstraints CA, keyCertSign) rather than a leaf (digitalSignature). */
  readonly ca?: boolean;
  /** The leaf's extended key usage. @default none: a CA has none */
  readonly usage?: 'clientAuth' | 'serverAuth';
  /** The CA that signs it. @default the certificate signs itself */
  readonly issuer?: IssuedCertificate;
  /** @default 365 */
  readonly days?: number;
}

const ECDSA_SHA256 = () => new AlgorithmIdentifier({ algorithm: '1.2.840.10045.4.3.2' });
const arrayBuffer = (b: Buffer): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer;
const commonName = (cn: string) =>
  new Name([new RelativeDistinguishedName([new AttributeTypeAndValue({ type: '2.5.4.3', value: new AttributeValue({ utf8String: cn }) })])]);
const extension = (extnID: string, critical: boolean, value: object) =>
  new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });

/**
 * A serial number's INTEGER content from random bytes: positive and in DER's shortest form (Go's x509 parser refuses a
 * redundant leading zero byte, which a first byte 0x00 followed by one below 0x80 is): the first byte 0x40-0x7f.
 */
export function serialNumber(random: Buffer): Buffer {
  const serial = Buffer.from(random);
  serial[0] = 0x40 + (serial[0] % 0x40);
  return serial;
}

/** Issues a certificate (a fresh P-256 key) as the request says. */
export function issueCertificate(req: CertificateRequest): IssuedCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const subject = commonName(req.commonName);
  const now = Date.now();
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: arrayBuffer(serialNumber(randomBytes(16))),
    signature: ECDSA_SHA256(),
    issuer: req.issuer ? AsnConvert.parse(req.issuer.subject, Name) : subject,
    // UTCTime up to 2049, GeneralizedTime after it, as RFC 5280 4.1.2.5 wants (the library's Time chooses)
    validity: new Validity({ notBefore: new Date(now - 60_000), notAfter: new Date(now + (req.days ?? 365) * 86_400_000) }),
    subject,
    subjectPublicKeyInfo: AsnConvert.parse(publicKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo),
    extensions: new Extensions([
      extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: req.ca === true })),
      extension(id_ce_keyUsage, true, new KeyUsage(req.ca ? KeyUsageFlags.keyCertSign : KeyUsageFlags.digitalSignature)),
      ...(req.usage ? [extension(id_ce_extKeyUsage, false, new ExtendedKeyUsage([req.usage === 'clientAuth' ? id_kp_clientAuth : id_kp_serverAuth]))] : []),
    ]),
  });
  const signature = sign('sha256', Buffer.from(AsnConvert.serialize(tbs)), req.issuer?.keyObject ?? privateKey);
  const signed = new Certificate({ tbsCertificate: tbs, signatureAlgorithm: ECDSA_SHA256(), signatureValue: arrayBuffer(signature) });
  const cert = Buffer.from(AsnConvert.serialize(signed));
  const pem = `-----BEGIN CERTIFICATE-----\n${cert.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  return { cert: pem, key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), keyObject: privateKey, subject: Buffer.from(AsnConvert.serialize(subject)) };
}
