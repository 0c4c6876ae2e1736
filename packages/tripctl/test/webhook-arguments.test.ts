import { cli } from './helpers.ts';

// The webhook commands' bad arguments: each refused with exit 2 and a sentence, before any database.

describe('bad arguments exit 2 before the database is touched', () => {
  // Nothing listens on port 1: reaching for the database would exit 1, not 2.
  const unreachable = { DATABASE_URL: 'postgres://tripctl@127.0.0.1:1/trips' };
  test.each([
    [
      'a missing --url',
      ['webhook', 'create', '--agency', 'agy_1', '--events', 'trip.created'],
      /required option '--url <url>'/,
    ],
    [
      'a missing --events',
      ['webhook', 'create', '--agency', 'agy_1', '--url', 'https://h.example/'],
      /required option '--events <list>'/,
    ],
    ['a missing --agency', ['webhook', 'list'], /required option '--agency <id>'/],
    [
      'an --id of the wrong type',
      ['webhook', 'enable', '--id', 'agy_1'],
      /'agy_1' is not a webhook id \(whk_…\)/,
    ],
    ['a missing id', ['webhook', 'disable'], /Give its id: tripctl webhook disable <id> \(or --id <id>\)/],
    [
      'a bad --limit',
      ['webhook', 'attempts', '--id', 'whk_1', '--limit', '0'],
      /'0' is not a whole number from 1 to 1000/,
    ],
    [
      'a non-numeric --limit',
      ['webhook', 'attempts', '--id', 'whk_1', '--limit', 'ten'],
      /'ten' is not a whole number/,
    ],
    [
      'a too long --description',
      [
        'webhook',
        'create',
        '--agency',
        'agy_1',
        '--url',
        'https://h.example/',
        '--events',
        'all',
        '--description',
        'x'.repeat(501),
      ],
      /1 to 500 characters/,
    ],
    [
      'a --rate-limit on create',
      [
        'webhook',
        'create',
        '--agency',
        'agy_1',
        '--url',
        'https://h.example/',
        '--events',
        'all',
        '--rate-limit',
        '0',
      ],
      /a rate limit is a whole number/,
    ],
    [
      'nothing to change',
      ['webhook', 'update', 'whk_1'],
      /nothing to change: give --url, --events, --description or --rate-limit\./,
    ],
    ['an unknown subcommand', ['webhook', 'delete'], /unknown command 'delete'/],
  ])('%s', async (_what, argv, message) => {
    const result = await cli(argv, unreachable);
    expect(result.stderr).toMatch(message);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
  });

  test.each(['0', '1001', '1.5', 'ten', '-5'])('a --rate-limit of %s', async (limit) => {
    const result = await cli(['webhook', 'update', 'whk_1', `--rate-limit=${limit}`], unreachable);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: option '--rate-limit <n|off>' argument '${limit}' is invalid. a rate limit is a whole number of deliveries a second from 1 to 1000, or off for none.\n(add --help for usage)\n`,
    });
  });

  test('--help lists webhook, and every webhook command takes --json', async () => {
    const help = await cli(['--help'], unreachable);
    expect(help.stdout).toMatch(/webhook/);
    for (const verb of ['create', 'list', 'disable', 'enable', 'attempts', 'attempt', 'resend']) {
      const result = await cli(['webhook', verb, '--help'], unreachable);
      expect({ verb, code: result.code, json: /--json/.test(result.stdout) }).toEqual({
        verb,
        code: 0,
        json: true,
      });
    }
  });
});
