export const APP = 'trainer';
