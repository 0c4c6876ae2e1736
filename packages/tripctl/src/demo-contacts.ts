/** The demo book's contacts, each on the trips whose keys `trips` lists. */
export const DEMO_CONTACTS = [
  {
    key: 'fiona',
    first_name: 'Fiona',
    last_name: 'MacLeod',
    email: 'fiona.macleod@example.com',
    phone: '+44 7700 900123',
    trips: ['standrews', 'pebble'],
  },
  {
    key: 'jack',
    first_name: 'Jack',
    last_name: 'Nicholls',
    email: 'jack@example.com',
    phone: null,
    trips: ['kiawah'],
  },
  {
    key: 'ana',
    first_name: 'Ana',
    last_name: 'Ferreira',
    email: null,
    phone: '+351 912 345 678',
    trips: ['algarve', 'costadelsol'],
  },
  {
    key: 'tom',
    first_name: 'Tom',
    last_name: 'Watson-Hale',
    email: 'tom.wh@example.com',
    phone: '+1 843 555 0142',
    trips: ['kiawah', 'bandon'],
  },
  {
    key: 'claire',
    first_name: 'Claire',
    last_name: 'Dubois',
    email: 'claire.dubois@example.com',
    phone: null,
    trips: ['costadelsol'],
  },
  // A lead who is on no trip yet.
  {
    key: 'sam',
    first_name: 'Sam',
    last_name: 'Okafor',
    email: 'sam.okafor@example.com',
    phone: null,
    trips: [],
  },
];
