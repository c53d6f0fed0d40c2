import { generateKeyPairSync, KeyObject, randomBytes, sign } from 'node:crypto';

/**
 * X.509 certificates the test bed issues itself (Node's crypto parses certificates but issues none): a CA and the
 * certificates it signs, ECDSA P-256 with SHA-256, DER written here. What kubeadm makes for a control plane's front
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

const der = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  const n = body.length;
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, Math.floor(n / 256), n % 256]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
};
const seq = (...c: Buffer[]) => der(0x30, ...c);
const oid = (dotted: string): Buffer => {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  // base 128, the high bit set on every byte but the last
  for (const v of rest) {
    const chunk = [v % 128];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) chunk.unshift((x % 128) + 128);
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
};
const utf8 = (s: string) => der(0x0c, Buffer.from(s, 'utf8'));
const bool = (v: boolean) => der(0x01, Buffer.from([v ? 0xff : 0]));
const bitString = (b: Buffer) => der(0x03, Buffer.from([0]), b);
const octets = (b: Buffer) => der(0x04, b);
const generalizedTime = (d: Date) => der(0x18, Buffer.from(`${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`, 'ascii'));
const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
}

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
  const subject = seq(der(0x31, seq(oid('2.5.4.3'), utf8(req.commonName))));
  const serial = serialNumber(randomBytes(16));
  const now = Date.now();
  const extensions = [
    extension('2.5.29.19', true, req.ca ? seq(bool(true)) : seq()),
    // keyUsage: keyCertSign (bit 5) for a CA, digitalSignature (bit 0) for a leaf
    extension('2.5.29.15', true, req.ca ? der(0x03, Buffer.from([2, 0x04])) : der(0x03, Buffer.from([7, 0x80]))),
    ...(req.usage ? [extension('2.5.29.37', false, seq(oid(req.usage === 'clientAuth' ? '1.3.6.1.5.5.7.3.2' : '1.3.6.1.5.5.7.3.1')))] : []),
  ];
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ECDSA_SHA256,
    req.issuer?.subject ?? subject,
    seq(generalizedTime(new Date(now - 60_000)), generalizedTime(new Date(now + (req.days ?? 365) * 86_400_000))),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, req.issuer?.keyObject ?? privateKey);
  const cert = seq(tbs, ECDSA_SHA256, bitString(signature));
  const pem = `-----BEGIN CERTIFICATE-----\n${cert.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  return { cert: pem, key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), keyObject: privateKey, subject };
}
