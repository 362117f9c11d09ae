// Who a public request comes from (src/shared/http/client-address.ts): an IPv4 address, or an IPv6 /64.
import { expect } from 'chai';
import { clientAddress } from '../../../src/shared/http/client-address.js';

describe('client address', () => {
  it('is the IPv4 address itself, an IPv4-mapped IPv6 address included', () => {
    expect(clientAddress('198.51.100.7')).to.deep.equal({ address: '198.51.100.7', network: '198.51.100.7' });
    expect(clientAddress('::ffff:198.51.100.7')).to.deep.equal({ address: '198.51.100.7', network: '198.51.100.7' });
  });

  it('counts an IPv6 client by its /64, however the address is written', () => {
    const a = clientAddress('2001:db8:1:2::1');
    const b = clientAddress('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff');
    expect(a.network).to.equal('2001:db8:1:2::/64');
    expect(b.network).to.equal(a.network);
    expect(a.address).not.to.equal(b.address);
    expect(clientAddress('2001:db8:1:3::1').network).to.equal('2001:db8:1:3::/64');
  });

  it('drops the port and brackets some proxies write: a client cannot change buckets by changing ports', () => {
    expect(clientAddress('198.51.100.7:51234')).to.deep.equal(clientAddress('198.51.100.7'));
    expect(clientAddress('[2001:db8:1:2::1]:443')).to.deep.equal(clientAddress('2001:db8:1:2::1'));
    expect(clientAddress('[2001:db8:1:2::1]')).to.deep.equal(clientAddress('2001:db8:1:2::1'));
  });

  it('keeps what is not an address as it is', () => {
    expect(clientAddress('')).to.deep.equal({ address: '', network: '' });
    expect(clientAddress('not-an-ip')).to.deep.equal({ address: 'not-an-ip', network: 'not-an-ip' });
  });
});
