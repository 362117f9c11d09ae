// What changed in a PDF after each of its signatures, and whether PAdES allows it (the
// modification analysis pyHanko and DSS do). Each incremental update is compared with the
// revision before it, object by object as the cross-reference tables define them, and every
// changed object must be explained by a rule:
// - always: later signatures and their fields (on a page's /Annots), document timestamps, the
//   Document Security Store and its VRI (PAdES-LT/LTA), the document information and XMP
//   metadata (not shown), cross-reference and object streams (containers): each of these rules
//   lets change only a new object or one that played its part in the signed revision, never
//   one the signed catalog reaches otherwise (optional content, actions, names, values...);
// - within the certification signature's DocMDP level (none: as 2 and 3), and outside FieldMDP
//   locks: P=2 form values (a field's /V, its widgets' /AS and /AP) and signing, P=3 also
//   annotations that cannot cover the page's content (links, pop-ups, hidden or empty ones).
// Anything else (a page's content, a new or removed page, an object a page shows redefined, a
// locked or signed field changed, a visible annotation added) makes every signature before
// the update not intact, with the reason.
import { PdfDict, PdfName, PdfRef, PdfStream, PdfString, type PdfValue } from './pdf.objects.js';
import { PdfRevision, newFileBudget, revisionEnds, type XrefEntry } from './pdf.revision.js';

/** One incremental update after the first signature, judged. */
export interface UpdateVerdict {
  /** Where the update ends (the byte after its %%EOF line). */
  end: number;
  /** What it changed, in words (allowed or not). */
  changes: string[];
  /** Why it is not allowed; undefined when it is. */
  violation?: string;
}

/** What the catalog may change after a signature. */
const CATALOG_KEYS = ['AcroForm', 'DSS', 'Extensions', 'Metadata', 'Version', 'StructTreeRoot', 'MarkInfo', 'PieceInfo'];
/**
 * What filling a field may change: its value (/V, /I of a choice), its widgets' state and
 * appearance (/AS, /AP, /MK, /DA), and its default value (/DV), as form-filling tools do.
 */
const FILL_KEYS = ['V', 'I', 'DV', 'AS', 'AP', 'MK', 'DA'];

/**
 * What a new signature field (and its widget) may hold: the field's own keys and the widget's
 * placement and appearance. Never an action (/A, /AA), optional content (/OC), a pop-up or any
 * other key a reader would act on.
 */
const SIGNATURE_FIELD_KEYS = new Set([
  'FT',
  'T',
  'TU',
  'TM',
  'V',
  'Ff',
  'Kids',
  'Parent',
  'Lock',
  'SV',
  'DA',
  'Q',
  'Type',
  'Subtype',
  'Rect',
  'F',
  'P',
  'AP',
  'AS',
  'MK',
  'NM',
  'M',
  'StructParent',
  'Border',
  'BS',
  'C',
  // Written by signing tools on the field or its widget: default resources, highlighting, alternate text.
  'DR',
  'H',
  'Contents',
]);

/** Objects walked at most when collecting a revision's pages, fields and annotations. */
const MAX_WALK = 200_000;

/**
 * What the signed revision's catalog reaches (`reached`: every object but those reached only
 * through its validation data, XMP metadata or logical structure, or only as what an
 * annotation draws or a field holds), and the objects playing
 * each of those roles: a rule for one of them may let change only a new object or one that
 * already played that role, never an object the signed document uses otherwise.
 */
interface Roles {
  reached: Set<number>;
  dss: Set<number>;
  structure: Set<number>;
  info: number | undefined;
  metadata: number | undefined;
}

/** The constraints in force for an update: from the signatures in the revision before it. */
interface Constraints {
  /** The certification signature's DocMDP level; undefined without one. */
  docMdp?: 1 | 2 | 3;
  /** Fully qualified names of fields locked by signed fields' FieldMDP (or '*' for all). */
  locked: Set<string>;
}

/** What a revision holds, found from its catalog: pages, fields, annotations. */
class Structure {
  readonly rootNum: number | undefined;
  readonly root: PdfDict | undefined;
  /** Page objects by number, in order, and the page tree's inner nodes. */
  readonly pages = new Map<number, number>();
  readonly pageNodes = new Set<number>();
  /** Field objects (terminal or not) by number, with their fully qualified names. */
  readonly fields = new Map<number, string>();
  /** Annotation object numbers of each page. */
  readonly annots = new Map<number, number[]>();
  /** Objects a page shows: its /Contents streams (number → page index). */
  readonly contents = new Map<number, number>();
  /**
   * Every object a page reaches but its annotations and its parent: contents, resources,
   * fonts, images, form XObjects, groups... What the page shows; no rule but the page's own
   * may let one change.
   */
  readonly shown = new Set<number>();
  /** What the pages draw themselves (contents, resources, inherited attributes), not through an annotation. */
  readonly pageShown = new Set<number>();
  /** Every annotation of every page. */
  readonly allAnnots = new Set<number>();
  /** Every object an annotation's appearance reaches, and every annotation that reaches it. */
  readonly appearanceOf = new Map<number, number[]>();
  private walked = 0;
  private roles?: Roles;

  constructor(readonly rev: PdfRevision) {
    const rootRef = rev.trailer.get('Root');
    this.rootNum = rootRef instanceof PdfRef ? rootRef.num : undefined;
    this.root = rev.dict(rootRef);
    this.walkPages(this.root?.get('Pages'), new Set());
    const form = rev.dict(this.root?.get('AcroForm'));
    this.walkFields(form?.get('Fields'), '', new Set());
  }

  private tick(): void {
    if (++this.walked > MAX_WALK) throw new Error('the PDF has too many pages, fields or annotations to examine');
  }

  private walkPages(node: PdfValue | undefined, seen: Set<number>): void {
    if (!(node instanceof PdfRef) || seen.has(node.num)) return;
    seen.add(node.num);
    this.tick();
    const dict = this.rev.dict(node);
    if (!dict) return;
    if (dict.name('Type') === 'Pages' || dict.get('Kids') !== undefined) {
      this.pageNodes.add(node.num);
      // Its pages inherit its /Resources, /MediaBox, /CropBox, /Rotate: shown as theirs are.
      for (const [key, v] of dict.entries) if (key !== 'Kids' && key !== 'Parent') this.reach(v, this.pageShown);
      const kids = this.rev.resolve(dict.get('Kids'));
      if (Array.isArray(kids)) for (const kid of kids) this.walkPages(kid, seen);
      return;
    }
    const index = this.pages.size;
    this.pages.set(node.num, index);
    const contents = dict.get('Contents');
    const list = contents instanceof PdfRef && Array.isArray(this.rev.get(contents.num)) ? (this.rev.get(contents.num) as PdfValue[]) : [contents];
    for (const c of list) if (c instanceof PdfRef) this.contents.set(c.num, index);
    for (const [key, v] of dict.entries) if (key !== 'Annots' && key !== 'Parent') this.reach(v, this.pageShown);
    const annots = this.rev.resolve(dict.get('Annots'));
    this.annots.set(node.num, Array.isArray(annots) ? annots.filter((a): a is PdfRef => a instanceof PdfRef).map((a) => a.num) : []);
    for (const a of this.annots.get(node.num)!) {
      this.allAnnots.add(a);
      // What an annotation draws is shown too; a form fill may redraw only what its own widget
      // alone draws: every object each appearance reaches is recorded with every annotation that
      // reaches it (a walk of its own per annotation, bounded with the rest).
      const ap = this.rev.dict(new PdfRef(a, 0))?.get('AP');
      const drawn = new Set<number>();
      this.reach(ap, drawn);
      for (const n of drawn) this.appearanceOf.set(n, [...(this.appearanceOf.get(n) ?? []), a]);
    }
  }

  /** Adds what `v` reaches to `into` (each object once, bounded; never a page), and to `shown`. */
  private reach(v: PdfValue | undefined, into: Set<number>): void {
    const stack: Array<PdfValue | undefined> = [v];
    while (stack.length > 0) {
      const x = stack.pop();
      if (x instanceof PdfRef) {
        if (into.has(x.num) || this.pages.has(x.num) || this.pageNodes.has(x.num)) continue;
        into.add(x.num);
        this.shown.add(x.num);
        this.tick();
        stack.push(this.rev.get(x.num));
      } else if (Array.isArray(x)) {
        // One by one: a spread of a large array overflows the call stack.
        for (const y of x) stack.push(y);
      } else if (x instanceof PdfDict) {
        // Every key: a resource may be named /P or /Parent. A reference to a page stops the walk.
        for (const y of x.entries.values()) stack.push(y);
      } else if (x instanceof PdfStream) stack.push(x.dict);
    }
  }

  private walkFields(list: PdfValue | undefined, prefix: string, seen: Set<number>): void {
    const fields = this.rev.resolve(list);
    if (!Array.isArray(fields)) return;
    for (const f of fields) {
      if (!(f instanceof PdfRef) || seen.has(f.num)) continue;
      seen.add(f.num);
      this.tick();
      const dict = this.rev.dict(f);
      if (!dict) continue;
      const t = dict.get('T');
      const name = t instanceof PdfString ? `${prefix}${prefix ? '.' : ''}${t.bytes.toString('latin1')}` : prefix;
      this.fields.set(f.num, name);
      this.walkFields(dict.get('Kids'), name, seen);
    }
  }

  /**
   * Everything the catalog reaches but its validation data, XMP metadata and logical structure
   * (whose own rules decide their objects), and the objects of each of those: computed once,
   * for the signed revision of an update.
   */
  rolesOf(): Roles {
    if (this.roles) return this.roles;
    const walk = (from: PdfValue | undefined, into: Set<number>, skip: ReadonlySet<string> = new Set(), parts = false): void => {
      const stack: Array<PdfValue | undefined> = [from];
      let top = true;
      while (stack.length > 0) {
        const x = stack.pop();
        if (x instanceof PdfRef) {
          if (into.has(x.num)) continue;
          into.add(x.num);
          this.tick();
          const v = this.rev.get(x.num);
          // `parts`: what annotations draw (their /AP) and what fields hold (a non-signature
          // field's /V) are theirs, judged by the form's rules; reached otherwise, they are the
          // document's as everything else.
          const annot = parts && this.allAnnots.has(x.num);
          const field = parts && this.fields.has(x.num) && v instanceof PdfDict && this.fieldType(v) !== 'Sig';
          if ((annot || field) && v instanceof PdfDict) {
            for (const [key, y] of v.entries) if (!(annot && key === 'AP') && !(field && key === 'V')) stack.push(y);
          } else stack.push(v);
        } else if (Array.isArray(x)) for (const y of x) stack.push(y);
        else if (x instanceof PdfDict) {
          for (const [key, y] of x.entries) if (!(top && skip.has(key))) stack.push(y);
        } else if (x instanceof PdfStream) stack.push(x.dict);
        top = false;
      }
    };
    // The catalog itself is walked once, from the top: an object that refers back to it (an
    // action, a field's /P) must not reach its /DSS, /Metadata or /StructTreeRoot through it.
    const reached = new Set<number>(this.rootNum === undefined ? [] : [this.rootNum]);
    walk(this.root, reached, new Set(['DSS', 'Metadata', 'StructTreeRoot']), true);
    const dss = new Set<number>();
    walk(this.root?.get('DSS'), dss);
    const structure = new Set<number>();
    walk(this.root?.get('StructTreeRoot'), structure);
    this.roles = {
      reached,
      dss,
      structure,
      info: refNum(this.rev.trailer.get('Info')),
      metadata: refNum(this.root?.get('Metadata')),
    };
    return this.roles;
  }

  /** A field's type, inherited from its parents (FT is inheritable). */
  fieldType(dict: PdfDict): string | undefined {
    let d: PdfDict | undefined = dict;
    for (let i = 0; d && i < 32; i++) {
      const ft = d.name('FT');
      if (ft) return ft;
      d = this.rev.dict(d.get('Parent'));
    }
    return undefined;
  }

  /** Who a changed object is, for a reason. */
  describe(num: number): string {
    if (num === this.rootNum) return 'the document catalog';
    if (this.pageNodes.has(num)) return 'the page tree';
    const page = this.pages.get(num);
    if (page !== undefined) return `page ${page + 1}`;
    const content = this.contents.get(num);
    if (content !== undefined) return `the content of page ${content + 1}`;
    const field = this.fields.get(num);
    if (field !== undefined) return `the form field "${field}"`;
    for (const [p, list] of this.annots) if (list.includes(num)) return `an annotation of page ${(this.pages.get(p) ?? 0) + 1}`;
    if (!this.shown.has(num) && this.roles?.reached.has(num))
      return `object ${num} (a part of the signed document: an action, a value, optional content, an outline...)`;
    return `object ${num} (a resource a page may show)`;
  }
}

/** Structural equality; references by object number (what they point to is compared on its own). */
export function same(a: PdfValue | undefined, b: PdfValue | undefined, depth = 0): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || depth > 64) return false;
  if (a instanceof PdfName) return b instanceof PdfName && a.name === b.name;
  if (a instanceof PdfString) return b instanceof PdfString && a.bytes.equals(b.bytes);
  if (a instanceof PdfRef) return b instanceof PdfRef && a.num === b.num && a.gen === b.gen;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i], depth + 1));
  if (a instanceof PdfStream) return b instanceof PdfStream && a.raw.equals(b.raw) && same(a.dict, b.dict, depth + 1);
  if (a instanceof PdfDict) {
    if (!(b instanceof PdfDict) || a.entries.size !== b.entries.size) return false;
    for (const [k, v] of a.entries) if (!same(v, b.entries.get(k), depth + 1)) return false;
    return true;
  }
  return false;
}

/** The object numbers whose definitions differ between two revisions (added, changed or freed). */
export function changedObjects(before: PdfRevision, after: PdfRevision): number[] {
  const nums = new Set<number>([...before.entries.keys(), ...after.entries.keys()]);
  const changed: number[] = [];
  for (const num of nums) {
    const x = before.entries.get(num);
    const y = after.entries.get(num);
    // The same place in the same prefix of the file: the same bytes.
    if (x && y && x.type === y.type && x.a === y.a && x.b === y.b) {
      if (x.type === 1) continue;
      const sx = before.entries.get(x.a);
      const sy = after.entries.get(y.a);
      if (sx && sy && sx.type === 1 && sy.type === 1 && sx.a === sy.a) continue;
    }
    if (!same(before.get(num), after.get(num))) changed.push(num);
  }
  return changed.sort((p, q) => p - q);
}

/** Reads the constraints the signatures of `rev` put on later updates. */
function constraintsOf(s: Structure): Constraints {
  const c: Constraints = { locked: new Set() };
  const perms = s.rev.dict(s.root?.get('Perms'));
  const certification = s.rev.dict(perms?.get('DocMDP'));
  // Values read as a reader reads them: an indirect /P or /TransformMethod resolved first (read
  // as they stand, `/P 11 0 R` was P=2 and an indirect method no certification at all). /P
  // absent is 2 (ISO 32000-1 Table 254); any other value than 1, 2 or 3 allows nothing.
  const nameOf = (v: PdfValue | undefined): string | undefined => {
    const r = s.rev.resolve(v);
    return r instanceof PdfName ? r.name : undefined;
  };
  for (const ref of asArray(s.rev.resolve(certification?.get('Reference')))) {
    const r = s.rev.dict(ref);
    if (nameOf(r?.get('TransformMethod')) !== 'DocMDP') continue;
    const params = s.rev.dict(r?.get('TransformParams'));
    const p = params?.get('P') === undefined ? 2 : s.rev.resolve(params.get('P'));
    c.docMdp = p === 1 || p === 2 || p === 3 ? p : 1;
  }
  for (const [num] of s.fields) {
    const field = s.rev.dict(new PdfRef(num, 0));
    if (!field || s.fieldType(field) !== 'Sig' || field.get('V') === undefined) continue;
    // A signed field's /Lock, and its signature's FieldMDP reference, lock fields from then on.
    const locks = [s.rev.dict(field.get('Lock'))];
    for (const ref of asArray(s.rev.resolve(s.rev.dict(field.get('V'))?.get('Reference')))) {
      const r = s.rev.dict(ref);
      if (nameOf(r?.get('TransformMethod')) === 'FieldMDP') locks.push(s.rev.dict(r?.get('TransformParams')));
    }
    for (const lock of locks) {
      if (!lock) continue;
      const action = nameOf(lock.get('Action'));
      const names = asArray(s.rev.resolve(lock.get('Fields'))).flatMap((n) => (n instanceof PdfString ? [n.bytes.toString('latin1')] : []));
      if (action === 'All') c.locked.add('*');
      else if (action === 'Include') for (const n of names) c.locked.add(n);
      else if (action === 'Exclude') for (const [, name] of s.fields) if (!names.includes(name)) c.locked.add(name);
    }
  }
  return c;
}

const asArray = (v: PdfValue | undefined): PdfValue[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]);
const refNum = (v: PdfValue | undefined): number | undefined => (v instanceof PdfRef ? v.num : undefined);

/** Annotation flags (ISO 32000-1 §12.5.3): Hidden (2) and NoView (32) keep it off the page. */
function invisible(annot: PdfDict, rev: PdfRevision): boolean {
  const flags = annot.get('F');
  if (typeof flags === 'number' && (flags & 2 || flags & 32)) return true;
  const rect = rev.resolve(annot.get('Rect'));
  if (Array.isArray(rect) && rect.length === 4 && rect.every((x) => typeof x === 'number')) {
    const [x1, y1, x2, y2] = rect;
    return x1 === x2 || y1 === y2;
  }
  return false;
}

/**
 * Judges the update from `before` to `after`. Never throws: a revision that cannot be
 * examined is a violation, with the reason.
 */
export function judgeUpdate(before: PdfRevision, after: PdfRevision, signed: ReadonlySet<string> = new Set()): UpdateVerdict {
  const verdict: UpdateVerdict = { end: after.end, changes: [] };
  try {
    judge(before, after, verdict, signed);
  } catch (err) {
    verdict.violation = `the update could not be examined: ${(err as Error).message.slice(0, 120)}`;
  }
  return verdict;
}

/** Whether the trailer's /AdditionalStreams ([name stream ...]) name the same streams, byte for byte, before and after. */
function sameSources(before: PdfRevision, after: PdfRevision): boolean {
  const x = before.resolve(before.trailer.get('AdditionalStreams'));
  const y = after.resolve(after.trailer.get('AdditionalStreams'));
  if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false;
  return x.every((v, i) => {
    const a = before.resolve(v);
    const b = after.resolve(y[i]);
    if (a instanceof PdfStream && b instanceof PdfStream) return a.raw.equals(b.raw) && same(a.dict.get('Filter'), b.dict.get('Filter'));
    return !(a instanceof PdfStream) && !(b instanceof PdfStream) && same(a, b);
  });
}

/** Trailer keys an update may write (ISO 32000-1 Table 15; an xref stream's dictionary, Table 17, is its trailer). */
const TRAILER_KEYS = new Set(['Size', 'Prev', 'Root', 'Info', 'ID', 'XRefStm', 'Type', 'W', 'Index', 'Length', 'Filter', 'DecodeParms']);

/**
 * `signed`: the ByteRanges ("a b c d") of the file's signatures, which the verifier checks: a
 * signature dictionary an update adds must be one of them and sign that very update, or it is
 * a "signature" nobody verified (and its field's widget an appearance anyone drew).
 */
function judge(before: PdfRevision, after: PdfRevision, verdict: UpdateVerdict, signed: ReadonlySet<string>): void {
  const old = new Structure(before);
  const now = new Structure(after);
  const rules = constraintsOf(old);
  const changed = changedObjects(before, after);
  const changedSet = new Set(changed);
  const rootChanged = (): boolean => changedSet.has(old.rootNum!) || old.rootNum !== now.rootNum;
  const allowed = new Set<number>();
  const say = (change: string): void => {
    if (!verdict.changes.includes(change)) verdict.changes.push(change);
  };
  const refuse = (why: string): void => {
    verdict.violation ??= why;
  };
  if (old.rootNum === undefined || now.rootNum === undefined) return refuse('the document catalog cannot be found');
  // The trailer carries the file's structure (/Size, /Prev, /XRefStm, an xref stream's own
  // keys), its catalog, its metadata and its identifiers; anything else there added or changed
  // after a signature (/Encrypt above all: it changes how every string and stream is read) is
  // not an update PAdES knows.
  for (const key of new Set([...before.trailer.entries.keys(), ...after.trailer.entries.keys()])) {
    if (TRAILER_KEYS.has(key) || same(before.trailer.get(key), after.trailer.get(key))) continue;
    // A hybrid PDF's source document (LibreOffice opens it instead of the PDF), written again on
    // each save: the same bytes are no change, other bytes are another document.
    if (key === 'AdditionalStreams' && sameSources(before, after)) continue;
    return refuse(`the trailer's /${key} was added or changed`);
  }
  // An object in use given another generation: the references to it still name the old one,
  // which some readers resolve to the new object and others to nothing.
  const generation = (e: XrefEntry): number => (e.type === 1 ? e.b : 0);
  for (const [num, y] of after.entries) {
    const x = before.entries.get(num);
    if (x && generation(x) !== generation(y))
      return refuse(`object ${num} was given another generation (${generation(x)}, then ${generation(y)}): references to it name the old one`);
  }
  // A tool may write the catalog as a new object: compared with the old one all the same.
  if (old.rootNum !== now.rootNum) {
    if (after.entries.has(old.rootNum) && !same(after.get(old.rootNum), before.get(old.rootNum))) return refuse('the old document catalog was changed');
    changed.push(old.rootNum);
    changedSet.add(old.rootNum);
    allowed.add(now.rootNum);
  }
  const isNew = (num: number): boolean => !before.entries.has(num);
  const roles = old.rolesOf();
  /**
   * Whether a rule may let `num` change: never an object the signed revision's catalog reaches
   * (a page shows, a page or the page tree, the catalog, a field, an annotation, an action, a
   * field's value, optional content, names...), but through its validation data, its XMP
   * metadata or its logical structure: their own rules decide those.
   */
  // Values kept in objects of their own (a non-signature field's /V n 0 R): the form's rules decide them, no other.
  const valueOf = new Map<number, string[]>();
  for (const [num, name] of old.fields) {
    const o = before.dict(new PdfRef(num, 0));
    const v = refNum(o?.get('V'));
    if (o && v !== undefined && old.fieldType(o) !== 'Sig') valueOf.set(v, [...(valueOf.get(v) ?? []), name]);
  }
  /** Whether the signed document uses `num` only as fields' values, if at all. */
  const valueAlone = (num: number): boolean =>
    !roles.reached.has(num) &&
    !old.shown.has(num) &&
    !old.pages.has(num) &&
    !old.pageNodes.has(num) &&
    num !== old.rootNum &&
    !old.fields.has(num) &&
    !old.allAnnots.has(num);
  const free = (num: number): boolean => !valueOf.has(num) && valueAlone(num);
  /** A rule for a role may let change a free object that is new, or that played the role in the signed revision. */
  const inRole = (num: number, was: boolean): boolean => free(num) && (isNew(num) || was);
  const mayFill = rules.docMdp === undefined || rules.docMdp >= 2;
  const mayAnnotate = rules.docMdp === undefined || rules.docMdp === 3;
  const lockedName = (name: string): boolean => rules.locked.has('*') || rules.locked.has(name);

  // Containers: cross-reference and object streams hold objects, each compared on its own.
  for (const num of changed) {
    const v = after.get(num);
    const container = (x: PdfValue | undefined) => x instanceof PdfStream && (x.dict.name('Type') === 'XRef' || x.dict.name('Type') === 'ObjStm');
    if (container(v) && inRole(num, container(before.get(num)))) allowed.add(num);
  }

  // The document information and the XMP metadata: not shown.
  const info = refNum(after.trailer.get('Info'));
  if (info !== undefined && changedSet.has(info) && inRole(info, info === roles.info) && after.get(info) instanceof PdfDict) {
    allowed.add(info);
    say('document information');
  }
  const metadata = refNum(now.root?.get('Metadata'));
  const metadataStream = metadata === undefined ? undefined : after.get(metadata);
  if (
    metadata !== undefined &&
    changedSet.has(metadata) &&
    inRole(metadata, metadata === roles.metadata) &&
    metadataStream instanceof PdfStream &&
    metadataStream.dict.name('Subtype') === 'XML'
  ) {
    allowed.add(metadata);
    say('XMP metadata');
  }

  // The Document Security Store (PAdES-LT): its dictionary, arrays, VRI, and the certificates,
  // OCSP responses and CRLs it holds.
  const dssRef = now.root?.get('DSS');
  const dssSeen = new Set<number>();
  const markDss = (v: PdfValue | undefined, depth: number): void => {
    if (v instanceof PdfRef) {
      if (dssSeen.has(v.num) || dssSeen.size > MAX_WALK) return;
      dssSeen.add(v.num);
      if (changedSet.has(v.num) && inRole(v.num, roles.dss.has(v.num))) allowed.add(v.num);
      const r = after.get(v.num);
      if (!(r instanceof PdfStream) && depth < 6) markDss(r, depth + 1);
    } else if (Array.isArray(v)) for (const x of v.slice(0, 100_000)) markDss(x, depth + 1);
    else if (v instanceof PdfDict && depth < 6) for (const [k, x] of v.entries) if (k !== 'Type') markDss(x, depth + 1);
  };
  if (dssRef !== undefined && !same(dssRef, old.root?.get('DSS'))) say('validation data (a Document Security Store)');
  if (dssRef instanceof PdfRef && changedSet.has(dssRef.num)) say('validation data (a Document Security Store)');
  markDss(dssRef, 0);

  // The logical structure (tags for accessibility, which signing tools extend with the new
  // widget): not shown. Its own objects only, never a page, field or annotation it points to.
  const markStructure = (v: PdfValue | undefined, depth: number, seen: Set<number>): void => {
    if (depth > 256 || seen.size > MAX_WALK) return;
    if (v instanceof PdfRef) {
      if (seen.has(v.num) || !free(v.num)) return;
      seen.add(v.num);
      const r = after.get(v.num);
      const type = r instanceof PdfDict ? r.name('Type') : undefined;
      // Structure elements, and the number and name trees of the parent tree, only.
      if (
        r instanceof PdfDict &&
        !(type === undefined
          ? ['K', 'Nums', 'Kids', 'Names', 'Limits', 'S'].some((k) => r.entries.has(k))
          : ['StructTreeRoot', 'StructElem', 'MCR', 'OBJR'].includes(type))
      )
        return;
      if (r instanceof PdfStream) return;
      if (changedSet.has(v.num) && inRole(v.num, roles.structure.has(v.num))) allowed.add(v.num);
      markStructure(r, depth + 1, seen);
    } else if (Array.isArray(v)) for (const x of v) markStructure(x, depth + 1, seen);
    else if (v instanceof PdfDict)
      for (const key of ['K', 'ParentTree', 'Nums', 'Kids', 'RoleMap', 'ClassMap', 'IDTree', 'Names']) markStructure(v.get(key), depth + 1, seen);
  };
  const structure = now.root?.get('StructTreeRoot');
  if (structure !== undefined && !same(structure, old.root?.get('StructTreeRoot'))) say('the logical structure (tags)');
  markStructure(structure, 0, new Set());

  // The catalog: only /AcroForm, /DSS, /Extensions, /Metadata, /Version, the logical structure
  // and application data (/PieceInfo) may change.
  if (rootChanged()) {
    allowed.add(old.rootNum);
    for (const key of new Set([...(old.root?.entries.keys() ?? []), ...(now.root?.entries.keys() ?? [])])) {
      if (same(old.root?.get(key), now.root?.get(key))) continue;
      if (!CATALOG_KEYS.includes(key)) return refuse(`the document catalog's /${key} was changed`);
    }
  }

  // New signature fields (their widgets, appearances and signature or timestamp dictionaries).
  const newSigWidgets = new Set<number>();
  /** A widget's appearance streams, new ones or (`redrawn`: a field filled or signed) ones it already had, redrawn. */
  const markAppearance = (widget: PdfDict, redrawn = false, owner?: number): void => {
    const ap = after.dict(widget.get('AP'));
    const walk = (v: PdfValue | undefined, depth: number): void => {
      if (v instanceof PdfRef) {
        const stream = after.get(v.num);
        // A redrawn stream must be this widget's own appearance, drawn by nothing else.
        const own =
          owner !== undefined &&
          old.appearanceOf.has(v.num) &&
          (old.appearanceOf.get(v.num) ?? []).every((a) => a === owner) &&
          !old.pageShown.has(v.num) &&
          !roles.reached.has(v.num);
        if (isNew(v.num) ? free(v.num) : redrawn && own && stream instanceof PdfStream && stream.dict.name('Subtype') === 'Form') allowed.add(v.num);
        return;
      }
      if (v instanceof PdfDict && depth < 3) for (const x of v.entries.values()) walk(x, depth + 1);
    };
    if (widget.get('AP') instanceof PdfRef && isNew(refNum(widget.get('AP'))!)) allowed.add(refNum(widget.get('AP'))!);
    walk(ap, 0);
  };
  const acceptSignatureField = (num: number, dict: PdfDict, existing = false): void => {
    if (!existing && !isNew(num)) return refuse(`object ${num}, which the signed revision has, was added to the form as a signature field`);
    const extra = [...dict.entries.keys()].find((k) => !SIGNATURE_FIELD_KEYS.has(k));
    if (extra !== undefined) return refuse(`a signature field with /${extra} was added (a signature field holds a signature, never an action or more)`);
    allowed.add(num);
    const v = refNum(dict.get('V'));
    const sig = after.dict(dict.get('V'));
    if (dict.get('V') !== undefined && (v === undefined || !isNew(v))) return refuse('a signature field whose signature dictionary is not a new one was added');
    if (v !== undefined) allowed.add(v);
    const kind =
      sig?.name('Type') === 'DocTimeStamp' || sig?.name('SubFilter') === 'ETSI.RFC3161'
        ? 'a document timestamp'
        : sig
          ? 'a signature'
          : 'an empty signature field';
    if (sig && v !== undefined) {
      const range = after.resolve(sig.get('ByteRange'));
      const key = Array.isArray(range) && range.length === 4 && range.every((x) => typeof x === 'number') ? range.join(' ') : undefined;
      const end = key === undefined ? -1 : (range as number[])[2]! + (range as number[])[3]!;
      if (key === undefined || !signed.has(key) || end <= before.end || end > after.end) {
        refuse(`a signature dictionary that does not sign its own update was added (${kind.replace(/^an? /, '')} nobody can verify)`);
      }
    }
    if (kind !== 'a document timestamp' && rules.docMdp === 1) refuse(`${kind} after a certification that allows no change (DocMDP P=1)`);
    say(kind);
    const widgets = dict.name('Subtype') === 'Widget' ? [num] : asArray(after.resolve(dict.get('Kids'))).flatMap((k) => (k instanceof PdfRef ? [k.num] : []));
    for (const w of widgets) {
      newSigWidgets.add(w);
      if (isNew(w) ? free(w) : changedSet.has(w) && w === num && existing) allowed.add(w);
      else if (!isNew(w) && w !== num) return refuse(`object ${w}, which the signed revision has, was made a signature field's widget`);
      const wd0 = after.dict(new PdfRef(w, 0));
      if (!wd0 || wd0.name('Subtype') !== 'Widget') return refuse(`a signature field whose kid is not a widget (${wd0?.name('Subtype') ?? 'none'}) was added`);
      const extraKey = [...wd0.entries.keys()].find((k) => !SIGNATURE_FIELD_KEYS.has(k));
      if (extraKey !== undefined) return refuse(`a signature widget with /${extraKey} was added (a widget of a signature draws it, never an action or more)`);
      // An empty signature field shows nothing, nor does a document timestamp (a timestamping
      // authority vouches for a time, never for what a widget draws): a visible widget draws
      // (with an appearance or without one, from its /MK), unless it is an existing field's
      // that keeps what the signed revision drew.
      const stamp = kind === 'a document timestamp';
      const kept = !isNew(w) && ['AP', 'MK', 'Rect', 'F'].every((k) => same(before.dict(new PdfRef(w, 0))?.get(k), wd0.get(k)));
      if ((stamp || !sig) && !invisible(wd0, after) && !kept) {
        refuse(
          stamp
            ? 'a document timestamp with a visible appearance was added (a timestamp shows nothing)'
            : 'an empty signature field with a visible appearance was added',
        );
      }
      const wd = after.dict(new PdfRef(w, 0));
      if (wd) markAppearance(wd, !stamp, w);
    }
  };

  // The form: fields may be added (signature fields only) and, where allowed, filled.
  const oldForm = old.root?.get('AcroForm');
  const newForm = now.root?.get('AcroForm');
  const formNum = refNum(newForm);
  if (formNum !== undefined && changedSet.has(formNum)) allowed.add(formNum);
  const fieldsNum = refNum(after.dict(newForm)?.get('Fields'));
  const drNum = refNum(after.dict(newForm)?.get('DR'));
  if (
    !same(oldForm, newForm) ||
    (formNum !== undefined && changedSet.has(formNum)) ||
    (fieldsNum !== undefined && changedSet.has(fieldsNum)) ||
    (drNum !== undefined && changedSet.has(drNum))
  ) {
    const o = before.dict(oldForm);
    const n = after.dict(newForm);
    for (const key of new Set([...(o?.entries.keys() ?? []), ...(n?.entries.keys() ?? [])])) {
      if (same(o?.get(key), n?.get(key)) && !(key === 'Fields' && n?.get(key) instanceof PdfRef && changedSet.has(refNum(n.get(key))!))) continue;
      if (key === 'Fields') continue;
      // /NeedAppearances would have a reader redraw every field from its value, whatever the
      // signed appearances show: never allowed.
      if (!['SigFlags', 'DR', 'DA'].includes(key)) return refuse(`the form's /${key} was changed`);
      if (key !== 'SigFlags' && !mayFill) return refuse(`the form's /${key} was changed, which the certification signature does not allow`);
    }
    const dr = refNum(n?.get('DR'));
    if (dr !== undefined && changedSet.has(dr) && same(o?.get('DR'), n?.get('DR')) && !old.shown.has(dr)) {
      if (!mayFill) return refuse("the form's default resources were changed, which the certification signature does not allow");
      allowed.add(dr);
    }
    const fieldsRef = refNum(n?.get('Fields'));
    if (fieldsRef !== undefined && changedSet.has(fieldsRef) && !old.shown.has(fieldsRef)) allowed.add(fieldsRef);
    const oldFields = asArray(before.resolve(o?.get('Fields'))).flatMap((f) => (f instanceof PdfRef ? [f.num] : []));
    const newFields = asArray(after.resolve(n?.get('Fields'))).flatMap((f) => (f instanceof PdfRef ? [f.num] : []));
    const oldSet = new Set(oldFields);
    const newSet = new Set(newFields);
    for (const f of oldFields) if (!newSet.has(f)) return refuse(`the form field "${old.fields.get(f) ?? f}" was removed`);
    for (const f of newFields) {
      if (oldSet.has(f)) continue;
      const dict = after.dict(new PdfRef(f, 0));
      if (!dict || now.fieldType(dict) !== 'Sig') return refuse(`a form field was added (${dict?.name('FT') ?? 'unknown type'}): only signature fields may be`);
      acceptSignatureField(f, dict);
    }
  }

  // Existing fields: an empty signature field signed, or (where allowed) a value filled in.
  for (const [num, name] of old.fields) {
    if (!changedSet.has(num)) continue;
    const o = before.dict(new PdfRef(num, 0));
    const n = after.dict(new PdfRef(num, 0));
    if (!o || !n) return refuse(`the form field "${name}" was removed`);
    const keys = [...new Set([...o.entries.keys(), ...n.entries.keys()])].filter((k) => !same(o.get(k), n.get(k)));
    if (old.fieldType(o) === 'Sig') {
      if (o.get('V') !== undefined) return refuse(`the signed field "${name}" was changed`);
      if (!keys.every((k) => ['V', 'AP', 'AS', 'MK'].includes(k))) return refuse(`the signature field "${name}" was changed beyond its signature`);
      if (lockedName(name) && n.get('V') !== undefined) return refuse(`the signature field "${name}" is locked by an earlier signature`);
      if (old.shown.has(num)) return refuse(`${old.describe(num)} was changed`);
      acceptSignatureField(num, n, true);
      continue;
    }
    if (!keys.every((k) => FILL_KEYS.includes(k)))
      return refuse(`the form field "${name}" was changed beyond its value (/${keys.find((k) => !FILL_KEYS.includes(k))})`);
    // An appearance redrawn without a new value shows what the value does not say.
    if (!keys.includes('V') && !keys.includes('I')) return refuse(`the appearance of the form field "${name}" was redrawn without its value changing`);
    if (!mayFill) return refuse(`the form field "${name}" was filled in, which the certification signature does not allow (DocMDP P=1)`);
    if (lockedName(name)) return refuse(`the form field "${name}" is locked by an earlier signature (FieldMDP)`);
    if (old.shown.has(num)) return refuse(`${old.describe(num)} was changed`);
    allowed.add(num);
    markAppearance(n, true, num);
    say('form field values');
  }
  // A value kept in an object of its own (/V n 0 R): redefining it fills in every field that
  // names it, under the same rules (a signature dictionary redefined is refused with the rest).
  for (const [num, names] of valueOf) {
    // Only a value the signed document uses as field values alone (never its optional content, an action, a page's resource...).
    if (!changedSet.has(num) || allowed.has(num) || !valueAlone(num)) continue;
    if (!mayFill) return refuse(`the form field "${names[0]}" was filled in, which the certification signature does not allow (DocMDP P=1)`);
    const locked = names.find(lockedName);
    if (locked !== undefined) return refuse(`the form field "${locked}" is locked by an earlier signature (FieldMDP)`);
    allowed.add(num);
    say('form field values');
  }

  // Widgets of existing fields (kids): their state and appearance, where filling is allowed.
  for (const [, list] of old.annots) {
    for (const num of list) {
      if (!changedSet.has(num) || allowed.has(num) || old.fields.has(num) || old.shown.has(num)) continue;
      const o = before.dict(new PdfRef(num, 0));
      const n = after.dict(new PdfRef(num, 0));
      if (!o || !n || o.name('Subtype') !== 'Widget') continue;
      const keys = [...new Set([...o.entries.keys(), ...n.entries.keys()])].filter((k) => !same(o.get(k), n.get(k)));
      const parent = refNum(o.get('Parent'));
      const name = parent === undefined ? undefined : old.fields.get(parent);
      // Only with its field's value changed in the same update (a form filled), never alone.
      const valueChanged =
        parent !== undefined && changedSet.has(parent) && !same(before.dict(new PdfRef(parent, 0))?.get('V'), after.dict(new PdfRef(parent, 0))?.get('V'));
      if (!keys.every((k) => ['AS', 'AP', 'MK', 'DA'].includes(k)) || !mayFill || name === undefined || lockedName(name) || !valueChanged) continue;
      allowed.add(num);
      markAppearance(n, true, num);
      say('form field values');
    }
  }

  // The page tree's inner nodes: an application's private note (Adobe's /ITXT) at most.
  for (const num of old.pageNodes) {
    if (!changedSet.has(num)) continue;
    const o = before.dict(new PdfRef(num, 0));
    const n = after.dict(new PdfRef(num, 0));
    if (!o || !n) return refuse('the page tree was changed');
    const keys = [...new Set([...o.entries.keys(), ...n.entries.keys()])].filter((k) => !same(o.get(k), n.get(k)));
    if (!keys.every((k) => k === 'ITXT')) return refuse(`the page tree was changed (/${keys.find((k) => k !== 'ITXT')})`);
    allowed.add(num);
  }

  // Pages: only their /Annots may change, gaining (never losing) annotations.
  for (const [num, index] of old.pages) {
    const o = before.dict(new PdfRef(num, 0));
    const n = after.dict(new PdfRef(num, 0));
    const annotsRef = refNum(n?.get('Annots'));
    const pageChanged = changedSet.has(num);
    const listChanged = annotsRef !== undefined && changedSet.has(annotsRef);
    if (!pageChanged && !listChanged) continue;
    if (!n) return refuse(`page ${index + 1} was removed`);
    if (pageChanged) {
      for (const key of new Set([...(o?.entries.keys() ?? []), ...n.entries.keys()])) {
        // /Tabs (the annotations' tab order) and /StructParents (its place in the tags) show nothing.
        if (key === 'Annots' || key === 'StructParents' || key === 'Tabs' || same(o?.get(key), n.get(key))) continue;
        return refuse(`page ${index + 1} was changed (/${key})`);
      }
      allowed.add(num);
    }
    if (listChanged && !old.shown.has(annotsRef)) allowed.add(annotsRef);
    const before_ = new Set(old.annots.get(num) ?? []);
    const after_ = new Set(asArray(after.resolve(n.get('Annots'))).flatMap((a) => (a instanceof PdfRef ? [a.num] : [])));
    for (const a of before_) if (!after_.has(a)) return refuse(`an annotation was removed from page ${index + 1}`);
    for (const a of after_) {
      if (before_.has(a) || newSigWidgets.has(a)) continue;
      const annot = after.dict(new PdfRef(a, 0));
      const subtype = annot?.name('Subtype') ?? 'unknown';
      if (!annot || !isNew(a)) return refuse(`page ${index + 1} was given an annotation that is not new (object ${a})`);
      if (subtype === 'Widget') return refuse(`a form field's widget was added to page ${index + 1} without its field`);
      if (!mayAnnotate) return refuse(`an annotation (${subtype}) was added to page ${index + 1}, which the certification signature does not allow`);
      // A link or pop-up draws nothing of its own unless it brings an appearance.
      if (!(((subtype === 'Link' || subtype === 'Popup') && annot.get('AP') === undefined) || invisible(annot, after))) {
        return refuse(`an annotation that can cover the page's content (${subtype}) was added to page ${index + 1}`);
      }
      allowed.add(a);
      say('annotations');
    }
  }
  // Whatever else changed, and was there when the signature was made, is not allowed; a new
  // object under the signed revision's /Size could fill a reference the signed revision left
  // dangling.
  // Every new object, allowed or not: a rule's new widget must not fill a dangling reference either.
  const added = changed.filter((num) => !before.entries.has(num) && after.entries.has(num));
  for (const num of changed) {
    if (allowed.has(num)) continue;
    if (before.entries.has(num)) return refuse(`${old.describe(num)} was ${after.entries.has(num) ? 'changed' : 'removed'}`);
  }
  const dangling = referencedIn(before, old, new Set(added));
  if (dangling !== undefined) return refuse(`object ${dangling}, which the signed revision refers to without defining, was defined after it`);
}

/**
 * One of `nums` (objects the signed revision does not define) that an object reachable from its
 * catalog refers to: a dangling reference, which defining the object later would fill.
 */
function referencedIn(rev: PdfRevision, s: Structure, nums: Set<number>): number | undefined {
  if (nums.size === 0 || s.rootNum === undefined) return undefined;
  const seen = new Set<number>();
  const queue: number[] = [s.rootNum];
  let found: number | undefined;
  const look = (v: PdfValue | undefined, depth: number): void => {
    if (found !== undefined || depth > 64) return;
    if (v instanceof PdfRef) {
      if (nums.has(v.num)) found = v.num;
      else if (!seen.has(v.num)) queue.push(v.num);
    } else if (Array.isArray(v)) for (const x of v) look(x, depth + 1);
    else if (v instanceof PdfDict) for (const x of v.entries.values()) look(x, depth + 1);
    else if (v instanceof PdfStream) look(v.dict, depth + 1);
  };
  while (queue.length > 0 && found === undefined) {
    const num = queue.pop()!;
    if (seen.has(num)) continue;
    seen.add(num);
    if (seen.size > MAX_WALK) throw new Error('the PDF has too many objects to examine');
    look(rev.get(num), 0);
  }
  return found;
}

/** What happened after one signature. */
export interface AfterSignature {
  /** The revision it signed: 1 for the file's first. */
  revision: number;
  /** What the updates after it changed, in words. */
  changesAfter: string[];
  /** Why it is not intact; undefined when every update after it is allowed. */
  violation?: string;
}

/**
 * The modification analysis of a signed PDF: for each signature (`ranges`: its ByteRange, the
 * signed bytes ending at its revision's end), its revision and what the updates after it
 * changed, allowed or not.
 */
/** Revisions examined at most (a real file's: a few dozen; DSS's test files: up to 49). */
export const MAX_REVISIONS = 512;

export function modificationsAfter(
  pdf: Buffer,
  ranges: ReadonlyArray<readonly [number, number, number, number]>,
  opts: { deadline?: number; budget?: ReturnType<typeof newFileBudget> } = {},
): AfterSignature[] {
  const budget = opts.budget ?? newFileBudget();
  const deadline = opts.deadline ?? Date.now() + 30_000;
  const ends = ranges.map((r) => r[2] + r[3]);
  const signed = new Set(ranges.map((r) => r.join(' ')));
  const eofs = revisionEnds(pdf);
  const last = eofs.at(-1) ?? pdf.length;
  // Bytes after the last %%EOF that are not white space are an update no reader would see.
  let tail = last;
  while (tail < pdf.length && [0x0a, 0x0d, 0x20, 0x09, 0x00].includes(pdf[tail]!)) tail++;
  const junk = tail < pdf.length ? 'bytes after the last %%EOF' : undefined;
  const first = Math.min(...ends);
  const points = [...new Set([...ends, ...eofs.filter((e) => e > first)])].sort((a, b) => a - b);
  if (points.length > MAX_REVISIONS) {
    return ends.map((end) => ({
      revision: eofs.filter((e) => e <= end).length || 1,
      changesAfter: [],
      violation: `more than ${MAX_REVISIONS} revisions to examine`,
    }));
  }
  const revisions = new Map<number, PdfRevision | string>();
  const read = (end: number): PdfRevision | string => {
    let r = revisions.get(end);
    if (r === undefined) {
      try {
        r = new PdfRevision(pdf, end, budget);
      } catch (err) {
        r = (err as Error).message.slice(0, 120);
      }
      revisions.set(end, r);
    }
    return r;
  };
  // The updates: between consecutive readable revisions (one that cannot be read alone is
  // merged into the next); the final revision must be readable.
  const updates: UpdateVerdict[] = [];
  let previous: PdfRevision | undefined;
  for (const end of points) {
    if (Date.now() > deadline) {
      updates.push({ end: points.at(-1)!, changes: [], violation: 'examining the updates took too long' });
      break;
    }
    const r = read(end);
    const isSignature = ends.includes(end);
    if (typeof r === 'string') {
      if (end === points.at(-1)) updates.push({ end, changes: [], violation: `the final revision cannot be read: ${r}` });
      else if (isSignature) updates.push({ end, changes: [], violation: `the signed revision cannot be read: ${r}` });
      continue;
    }
    if (previous) updates.push(judgeUpdate(previous, r, signed));
    previous = r;
  }
  // The file's bytes, the signed ones included, hold only definitions some revision's
  // cross-reference points at (a later one may point into earlier bytes, as a hybrid file's
  // stream does) and what lies inside them: a reader that rebuilds the cross-reference by
  // scanning takes the last definition of each object it finds, dead or shadow ones included.
  let stray: string | undefined;
  const final = read(last);
  if (Date.now() > deadline) stray = "examining the file's structure took too long";
  else if (typeof final !== 'string') {
    const pointed = new Set<number>();
    for (const end of eofs) {
      const r = read(end);
      if (typeof r === 'string') continue;
      for (const e of r.entries.values()) if (e.type === 1) pointed.add(e.a);
      for (const s of r.sections) pointed.add(s);
    }
    const found = final.strayDefinitions(0, last, pointed)[0];
    if (found)
      stray = `a definition of object ${found.num} at offset ${found.offset} that no cross-reference section points at (a reader rebuilding the cross-reference would show it)`;
  }
  return ends.map((end) => {
    const after = updates.filter((u) => u.end > end);
    const own = updates.find((u) => u.end === end && u.violation?.startsWith('the signed revision'));
    const violation = own?.violation ?? after.find((u) => u.violation)?.violation ?? junk ?? stray;
    return {
      revision: eofs.filter((e) => e <= end).length || 1,
      changesAfter: [...new Set(after.flatMap((u) => u.changes))],
      ...(violation !== undefined && { violation }),
    };
  });
}
