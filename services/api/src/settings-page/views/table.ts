import { html, type SafeHtml } from '../html.ts';

// The settings page's tables (the overview's keys and webhooks, a webhook's delivery log), drawn
// one way. Each column's heading is written once: it heads the column and labels each of its cells
// (data-label), which narrow screens show above the cell when rows stack as cards (styles.ts).

type Cell = SafeHtml | string | number;

export interface Column<Row> {
  heading: string;
  cell: (row: Row) => Cell;
  /** The cell that names the row: a <th scope="row">, which reads as the card's title when stacked. */
  namesRow?: boolean;
  /** A cell that says what it is itself (a "Details" link): no label when stacked. */
  unlabelled?: boolean;
}

export function table<Row>(
  columns: Column<Row>[],
  rows: Row[],
  options: { caption?: Cell; className?: string } = {},
): SafeHtml {
  return html`<table${options.className ? html` class="${options.className}"` : ''}>
    ${
      options.caption === undefined
        ? ''
        : html`<caption>
            ${options.caption}
          </caption>`
    }
    <thead>
      <tr>
        ${columns.map((c) => html`<th scope="col">${c.heading}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (row) =>
          html`<tr>
            ${columns.map((c) => cell(c, row))}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function cell<Row>(column: Column<Row>, row: Row): SafeHtml {
  const content = column.cell(row);
  if (column.namesRow) return html`<th scope="row">${content}</th>`;
  if (column.unlabelled) return html`<td>${content}</td>`;
  return html`<td data-label="${column.heading}">${content}</td>`;
}
