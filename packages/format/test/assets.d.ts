/** Vite's `?inline` asset imports: the file as a base64 data URL. */
declare module '*?inline' {
  const dataUrl: string;
  export default dataUrl;
}
