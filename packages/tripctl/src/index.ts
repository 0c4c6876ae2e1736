export { run, type RunOptions } from './program.ts';
export { CliError } from './errors.ts';
