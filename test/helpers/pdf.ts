// PDF documents for tests that attach one (a report a user sends, a file an agent reads): a valid file of
// one page for each text given, its pages' text read back as a provider reads it, and a page count.
// Uncompressed, as a PDF writer may leave it; what a provider sees of a page is its text and a picture.

/** A PDF string literal: backslashes and parentheses escaped. */
const literal = (text: string): string => `(${text.replace(/[\\()]/g, (character) => `\\${character}`)})`;

/** A PDF of one US Letter page for each text, each page's text one line of Helvetica. */
export function pdf(pages: readonly string[]): Buffer {
  const objects: string[] = [];
  const font = 3 + pages.length * 2;
  objects.push('<< /Type /Catalog /Pages 2 0 R >>');
  const kids = pages.map((_page, index) => `${3 + index * 2} 0 R`).join(' ');
  objects.push(`<< /Type /Pages /Kids [${kids}] /Count ${pages.length} >>`);
  pages.forEach((text, index) => {
    const content = `BT /F1 12 Tf 72 720 Td ${literal(text)} Tj ET`;
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${4 + index * 2} 0 R /Resources << /Font << /F1 ${font} 0 R >> >> >>`,
    );
    objects.push(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`);
  });
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** The text of each page of a PDF `pdf` wrote (its content streams in order), as a provider extracts it. */
export function pdfPageTexts(file: Buffer): string[] {
  const text = file.toString('latin1');
  return [...text.matchAll(/stream\n([\s\S]*?)\nendstream/g)].map((stream) =>
    [...(stream[1] as string).matchAll(/\(((?:\\.|[^\\)])*)\) Tj/g)]
      .map((shown) => (shown[1] as string).replace(/\\(.)/g, '$1'))
      .join(''),
  );
}

/** The PDF a data URL (`data:application/pdf;base64,…`) holds; undefined for anything else. */
export function pdfOfDataUrl(url: unknown): Buffer | undefined {
  if (typeof url !== 'string') return undefined;
  const data = /^data:application\/pdf;base64,(.*)$/s.exec(url)?.[1];
  return data === undefined ? undefined : Buffer.from(data, 'base64');
}
