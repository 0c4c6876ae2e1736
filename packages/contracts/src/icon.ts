// The service's icon, a flag on a green: the browser tab of every page the API serves (the
// reference at /docs, the settings page) shows it, and a browser that asks for /favicon.ico by
// itself gets it too. SVG, so one small file is sharp at every size.

/** Where the API serves the icon; every page links it. */
export const ICON_PATH = '/favicon.svg';

export const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#1f6b45"/>
<ellipse cx="16" cy="25.5" rx="9" ry="2.5" fill="#8fcca8"/>
<path d="M11.5 25V6" stroke="#fff" stroke-width="2.5" stroke-linecap="round"/>
<path d="M12.5 5.5 24 10.25 12.5 15z" fill="#fff"/>
</svg>
`;
