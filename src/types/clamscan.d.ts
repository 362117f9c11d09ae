// The part of clamscan 2.x (no bundled types) that the scan worker uses.
declare module 'clamscan' {
  import type { Transform } from 'node:stream';

  export interface ScanResult {
    /** true: a threat; false: clean; null: clamd answered something else (a timeout). */
    isInfected: boolean | null;
    viruses: string[];
    resultString?: string;
    timeout?: boolean;
  }

  export interface ClamdSettings {
    socket?: string | false;
    host?: string | false;
    port?: number | false;
    timeout?: number;
    localFallback?: boolean;
    active?: boolean;
  }

  export default class NodeClam {
    init(options: {
      removeInfected?: boolean;
      debugMode?: boolean;
      preference?: 'clamdscan' | 'clamscan';
      clamscan?: { active?: boolean };
      clamdscan?: ClamdSettings;
    }): Promise<NodeClam>;
    /** A Transform that forwards its input and streams it to clamd INSTREAM, emitting
     * 'scan-complete' (ScanResult) or 'error'. */
    passthrough(): Transform;
    getVersion(): Promise<string>;
  }
}
