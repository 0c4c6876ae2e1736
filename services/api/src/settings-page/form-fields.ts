// A form's fields as the urlencoded parser leaves them: a string, several (an array), or none.

/** Every value of a field that may repeat (checkboxes), strings only. */
export const fields = (value: unknown): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter(
    (v): v is string => typeof v === 'string',
  );
/** A field's one value, or '' when it is missing or repeated. */
export const field = (value: unknown): string => (typeof value === 'string' ? value : '');
/** A field that may be left empty: null when it is blank. */
export const optionalText = (value: unknown): string | null =>
  field(value).trim() === '' ? null : field(value);
