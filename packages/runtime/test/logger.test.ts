import { createLogger } from '../src/logger.ts';

function capture() {
  const lines: string[] = [];
  const logger = createLogger('test', 'info', { write: (line: string) => void lines.push(line) });
  return { logger, text: () => lines.join('') };
}

test('credentials are redacted even when a whole object is logged by mistake', () => {
  const { logger, text } = capture();
  const key = `tps_${'K'.repeat(40)}`;
  logger.info(
    {
      req: { headers: { authorization: `Bearer ${key}`, cookie: 'session=abc123secret' } },
      key,
      webhook: { secret: 'whsec_verysecret' },
      user: { password: 'hunter2hunter2' },
      databaseUrl: 'postgres://app:dbpassword@db/trips',
    },
    'oops',
  );
  const out = text();
  expect(out).toContain('oops');
  for (const secret of [key, 'abc123secret', 'whsec_verysecret', 'hunter2hunter2', 'dbpassword']) {
    expect(out).not.toContain(secret);
  }
  expect(out).toContain('[redacted]');
});
