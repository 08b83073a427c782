export const APP = 'inspector';
