// The database URL is read with the WHATWG URL parser rather than handed to Sequelize, whose
// url.parse() is deprecated (DEP0169), and read as Sequelize read it: each expectation here is
// what Sequelize 6 made of the same URL. A URL the two parsers could read otherwise is still
// Sequelize's to read.
import { expect } from 'chai';
import { createSequelize, databaseUrlOptions } from '../../../src/shared/db/sequelize.js';

describe('reading the database URL', () => {
  it('takes the dialect, credentials (decoded, split at the first colon), host (lower case, an IPv6 address unbracketed), port and database', () => {
    expect(databaseUrlOptions('mysql://registry:registry-local-only@127.0.0.1:3320/registry_x')).to.deep.equal({
      dialect: 'mysql',
      host: '127.0.0.1',
      port: 3320,
      database: 'registry_x',
      username: 'registry',
      password: 'registry-local-only',
      query: {},
    });
    expect(databaseUrlOptions('mysql://U:P@HoSt.Example.COM:3306/DB')).to.deep.include({
      host: 'host.example.com',
      username: 'U',
      password: 'P',
      database: 'DB',
    });
    expect(databaseUrlOptions('mysql://u%3Ax:p%40y%3Az@h/db')).to.deep.include({ username: 'u', password: 'x:p@y:z' });
    expect(databaseUrlOptions('mysql://u:p@[::1]:3306/db')).to.deep.include({ host: '::1', port: 3306 });
    expect(databaseUrlOptions('mariadb://u:p@h/db')).to.deep.include({ dialect: 'mariadb' });
    expect(databaseUrlOptions('mysql://h/db')).to.deep.equal({ dialect: 'mysql', host: 'h', database: 'db', query: {} });
    expect(databaseUrlOptions('mysql://:p@h/')).to.deep.equal({ dialect: 'mysql', host: 'h', password: 'p', query: {} });
  });

  it('takes the query as driver options, its host as the host', () => {
    expect(databaseUrlOptions('mysql://u:p@h/db?host=other&charset=latin1&a=1&a=2&x=a+b')).to.deep.include({
      host: 'other',
      query: { host: 'other', charset: 'latin1', a: ['1', '2'], x: 'a b' },
    });
  });

  it('leaves to Sequelize a URL the two parsers could read otherwise', () => {
    for (const url of [
      'mysql://u:p@h:03306/db',
      'mysql://u:p@h:/db',
      'mysql://u:@h/db',
      'mysql://u:p@h/a/../db',
      'mysql://u:p@h/db#fragment',
      'mysql://u:p@h/d b',
      "mysql://u:p@h/d'b",
      'mysql://u:p@hé/db',
      'mysql://u:p@xn--zz/db',
      'mysql://u:p@[::FFFF:127.0.0.1]/db',
      `mysql://u:p@${'a'.repeat(64)}/db`,
      'mysql://u:p%zz@h/db',
      'mysql://u:p@x@h/db',
      'mysql://u:p@h/db?host=a&host=b',
      'mysql://user:password@host:port/database',
      'MYSQL://u:p@h/db',
      'postgres://u:p@h/db',
    ])
      expect(databaseUrlOptions(url), url).to.equal(undefined);
  });

  it('gives Sequelize the same connection as the URL did', async () => {
    const db = createSequelize({ url: 'mysql://u%40x:p@db.example:3307/registry?charset=latin1&ssl=%7B%7D', poolMax: 1 });
    try {
      expect(db.config).to.deep.include({ database: 'registry', username: 'u@x', password: 'p', host: 'db.example', port: 3307 });
      expect(db.getDialect()).to.equal('mysql');
      expect(db.config.dialectOptions).to.deep.include({ typeCast: true, timezone: 'Z', charset: 'latin1', ssl: '{}', maxPreparedStatements: 64 });
      const noPassword = createSequelize({ url: 'mysql://u@h/db', poolMax: 1 });
      expect(noPassword.config).to.deep.include({ username: 'u', password: null, host: 'h' });
      await noPassword.close();
    } finally {
      await db.close();
    }
  });
});
