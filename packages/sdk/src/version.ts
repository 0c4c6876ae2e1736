/** The package's version, sent in User-Agent; test/package.test.ts holds it equal to package.json's. */
export const VERSION = '0.1.0';
