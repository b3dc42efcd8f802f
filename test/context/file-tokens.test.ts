// A file part's tokens (docs/budgeting.md#files): a PDF by its pages — read from its page objects, its
// page tree's count when those are compressed, else its size — another file by its bytes, one by id as a page.
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { filePartTokens, pdfPages, pdfPageTokens } from '../../src/context/file-tokens.js';
import { pdf } from '../helpers/pdf.js';

const part = (fileData: string) => ({ type: 'file', file: { filename: 'report.pdf', file_data: fileData } });
const pdfUrl = (file: Buffer) => `data:application/pdf;base64,${file.toString('base64')}`;

describe('pdfPages', () => {
  it.each([1, 7, 30])('counts the %i page objects of a PDF, not its page tree', (count) => {
    const file = pdf(Array.from({ length: count }, (_, index) => `Page ${index + 1} of the report.`));
    expect(pdfPages(file)).toBe(count);
  });

  it('reads "/Type/Page" without a space, and not "/Pages" or "/PageLabels"', () => {
    const file = Buffer.from(
      '%PDF-1.7\n1 0 obj <</Type/Pages/Count 3>> endobj 2 0 obj <</Type/Page>> endobj 3 0 obj <</Type /PageLabels>> endobj 4 0 obj <</Type\n/Page /Parent 1 0 R>> endobj',
      'latin1',
    );
    expect(pdfPages(file)).toBe(2);
  });

  it('counts the page objects that sit in compressed object streams (pdfTeX, Word)', () => {
    const objects = (count: number) =>
      deflateSync(
        Buffer.from(
          `<</Type/Pages/Kids[]/Count ${count}>> ${'<</Type/Page/Parent 6 0 R>> '.repeat(count)}`,
          'latin1',
        ),
      );
    const file = Buffer.concat([
      Buffer.from('%PDF-1.5\n5 0 obj <</Type/ObjStm/N 31/Length 99/Filter/FlateDecode>>stream\r\n', 'latin1'),
      objects(30),
      Buffer.from('\nendstream endobj\n7 0 obj <</Type /ObjStm /N 8>>stream\n', 'latin1'),
      objects(7),
      Buffer.from('\nendstream endobj\n%%EOF', 'latin1'),
    ]);
    expect(pdfPages(file)).toBe(37);
  });

  it('takes the page tree’s count when its pages cannot be read (an object stream not Flate)', () => {
    const file = Buffer.concat([
      Buffer.from('%PDF-1.5\n5 0 obj <</Type/ObjStm/N 1>>stream\n', 'latin1'),
      deflateSync(Buffer.from('<</Type/Pages/Kids[7 0 R]/Count 12>>', 'latin1')),
      Buffer.from(
        '\nendstream endobj\n7 0 obj <</Type/ObjStm/Filter/LZWDecode>>stream\nnot flate\nendstream',
        'latin1',
      ),
    ]);
    expect(pdfPages(file)).toBe(12);
  });

  it('reads object streams only until 2 MB came out of them (a stream that inflates a thousandfold)', () => {
    const stream = (text: string) =>
      Buffer.concat([
        Buffer.from('<</Type/ObjStm>>stream\n', 'latin1'),
        deflateSync(Buffer.from(text, 'latin1')),
        Buffer.from('\nendstream\n', 'latin1'),
      ]);
    const pages = (count: number) => '<</Type/Page>> '.repeat(count);
    const within = Buffer.concat([stream(' '.repeat(1_000_000) + pages(5)), stream(pages(7))]);
    expect(pdfPages(within)).toBe(12);
    // Past 2 MB of spaces, the first stream's pages and the second stream are never read: the file's
    // size is all that is left to go by.
    const past = Buffer.concat([stream(' '.repeat(3_000_000) + pages(5)), stream(pages(7))]);
    expect(pdfPages(past)).toBe(1);
  });

  it('takes one page a 50 KB when nothing counts them, at least one', () => {
    expect(pdfPages(Buffer.alloc(260_000, 0x41))).toBe(6);
    expect(pdfPages(Buffer.from('%PDF-1.7', 'latin1'))).toBe(1);
  });
});

describe('filePartTokens', () => {
  it('counts a PDF sent as a data URL by its pages, or as the base64 alone', () => {
    const file = pdf(['One.', 'Two.', 'Three.']);
    expect(filePartTokens(part(pdfUrl(file)))).toBe(3 * pdfPageTokens);
    expect(filePartTokens(part(file.toString('base64')))).toBe(3 * pdfPageTokens);
  });

  it('counts another file sent as data by its bytes, a token for every three', () => {
    const text = 'a line of a markdown file\n'.repeat(100);
    expect(filePartTokens(part(`data:text/markdown;base64,${Buffer.from(text).toString('base64')}`))).toBe(
      Math.ceil(text.length / 3),
    );
  });

  it('counts a file by id, whose content it cannot see, as one page', () => {
    expect(filePartTokens({ type: 'file', file: { file_id: 'file-abc123' } })).toBe(pdfPageTokens);
  });

  it('counts a part once: its count is kept on it, not written out with it', () => {
    const counted = part(pdfUrl(pdf(['Only page.'])));
    expect(filePartTokens(counted)).toBe(pdfPageTokens);
    expect(JSON.stringify(counted)).not.toContain('1500');
    expect(Object.keys(counted.file)).toEqual(['filename', 'file_data']);
  });
});
