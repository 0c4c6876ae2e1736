import { html } from '../html.ts';

/** How long the old secret or key keeps signing after a rotation: the choices the forms offer. */
const OVERLAP_CHOICES: { value: string; label: string }[] = [
  { value: '0', label: 'no overlap: the old one stops now' },
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '24 hours' },
  { value: '259200', label: '3 days' },
  { value: '604800', label: '7 days' },
];

/** The overlap's select (`overlap_seconds`), 24 hours chosen. */
export const overlapSelect = (id: string, describedBy: string) =>
  html`<select id="${id}" name="overlap_seconds" aria-describedby="${describedBy}">
    ${OVERLAP_CHOICES.map(
      (c) =>
        html`<option value="${c.value}" ${c.value === '86400' ? html` selected` : ''}>${c.label}</option>`,
    )}
  </select>`;
