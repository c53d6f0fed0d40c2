import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/twin/x509';

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
