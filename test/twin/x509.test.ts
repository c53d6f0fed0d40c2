import { X509Certificate } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';
import { describe, expect, it } from 'vitest';
import { issueCertificate, serialNumber } from '../../src/twin/x509';

describe('issueCertificate (the front proxy\'s CA and client certificate)', () => {
  it('a CA that signs itself, and a client certificate it issues: parsed and verified by Node\'s X.509', () => {
    const ca = issueCertificate({ commonName: 'front-proxy-ca', ca: true });
    const client = issueCertificate({ commonName: 'front-proxy-client', usage: 'clientAuth', issuer: ca });
    const c = new X509Certificate(client.cert);
    const a = new X509Certificate(ca.cert);
    expect(a.ca).toBe(true);
    expect(a.verify(a.publicKey)).toBe(true);
    expect(c.ca).toBe(false);
    expect(c.subject).toBe('CN=front-proxy-client');
    expect(c.issuer).toBe('CN=front-proxy-ca');
    expect(c.checkIssued(a)).toBe(true);
    expect(c.verify(a.publicKey)).toBe(true);
    expect(c.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(c.checkPrivateKey(client.keyObject)).toBe(true);
    expect(Date.parse(c.validTo) - Date.now()).toBeGreaterThan(364 * 86_400_000);
    // one that signs itself is no one else's: a leaf of another CA does not verify against it
    const other = issueCertificate({ commonName: 'other', ca: true });
    expect(c.verify(new X509Certificate(other.cert).publicKey)).toBe(false);
  });
});

describe('the serial number', () => {
  /** The content of the serial number's INTEGER in a certificate's DER (Certificate > TBSCertificate > [0] version, serial). */
  function serialContent(raw: Buffer): Buffer {
    let at = 0;
    const header = () => {
      const tag = raw[at++];
      let len = raw[at++];
      if (len >= 0x80) {
        const n = len - 0x80;
        len = 0;
        for (let i = 0; i < n; i++) len = len * 256 + raw[at++];
      }
      return { tag, len };
    };
    header(); // Certificate
    header(); // TBSCertificate
    const version = header();
    expect(version.tag).toBe(0xa0);
    at += version.len;
    const serial = header();
    expect(serial.tag).toBe(0x02);
    return raw.subarray(at, at + serial.len);
  }

  it('is a positive INTEGER in DER\'s shortest form whatever the random bytes (Go\'s x509 parser refuses a redundant leading zero)', () => {
    for (const first of [0x00, 0x01, 0x3f, 0x40, 0x7f, 0x80, 0xc0, 0xff]) {
      const s = serialNumber(Buffer.from([first, 0x00, 0x7f, 0x80]));
      expect(s[0]).toBeGreaterThanOrEqual(0x40);
      expect(s[0]).toBeLessThan(0x80);
      expect([...s.subarray(1)]).toEqual([0x00, 0x7f, 0x80]);
    }
  });

  it('is written as is in every certificate issued', () => {
    const ca = issueCertificate({ commonName: 'front-proxy-ca', ca: true });
    for (let i = 0; i < 50; i++) {
      const content = serialContent(new X509Certificate(issueCertificate({ commonName: `c${i}`, usage: 'clientAuth', issuer: ca }).cert).raw);
      expect(content.length).toBe(16);
      expect(content[0]).toBeGreaterThanOrEqual(0x40);
      expect(content[0]).toBeLessThan(0x80);
    }
  });
});

describe('the validity', () => {
  /** The tags of notBefore and notAfter in a certificate's DER (read by the ASN.1 library: it keeps the CHOICE taken). */
  function timeChoices(pem: string): string[] {
    const { validity } = AsnConvert.parse(new X509Certificate(pem).raw, Certificate).tbsCertificate;
    return [validity.notBefore, validity.notAfter].map((t) => (t.utcTime ? 'UTCTime' : t.generalTime ? 'GeneralizedTime' : 'none'));
  }

  it('is UTCTime through 2049 and GeneralizedTime from 2050 (RFC 5280 4.1.2.5)', () => {
    expect(timeChoices(issueCertificate({ commonName: 'a', ca: true }).cert)).toEqual(['UTCTime', 'UTCTime']);
    const years = 2051 - new Date().getUTCFullYear();
    const late = issueCertificate({ commonName: 'b', ca: true, days: years * 366 });
    expect(timeChoices(late.cert)).toEqual(['UTCTime', 'GeneralizedTime']);
    expect(new Date(new X509Certificate(late.cert).validTo).getUTCFullYear()).toBeGreaterThanOrEqual(2050);
  });
});
