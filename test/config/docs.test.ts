// The configuration tables of docs/operations.md and README.md are written from the settings table
// (scripts/settings-markdown.ts). This fails when a committed one differs: run `pnpm docs:settings`.
import { settingsDocs } from '../../scripts/settings-markdown.ts';
import { root } from '../deploy/helpers.ts';

test.each(await settingsDocs(root))(
  '$path holds the tables `pnpm docs:settings` writes',
  ({ current, wanted }) => {
    expect(current).toBe(wanted);
  },
);
