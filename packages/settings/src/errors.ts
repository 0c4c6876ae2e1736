/**
 * Why an owner action was refused: `forbidden` (the actor is not an owner of the object's agency;
 * 403), `invalid` (bad input; 400), `not_found` (no such object; 404), `unavailable` (the broker
 * or the dispatcher's queue is not there; 503). Nothing was changed and nothing audited.
 */
export type SettingsErrorCode = 'forbidden' | 'invalid' | 'not_found' | 'unavailable';

export class SettingsError extends Error {
  readonly code: SettingsErrorCode;
  constructor(code: SettingsErrorCode, message: string) {
    super(message);
    this.name = 'SettingsError';
    this.code = code;
  }
}

export const invalid = (message: string) => new SettingsError('invalid', message);
export const notFound = (message: string) => new SettingsError('not_found', message);
