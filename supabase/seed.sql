-- Seed data for the example app (supabase db reset runs it after the migrations).
-- Names make a leak obvious: everything of Acme says "Acme", everything of Globex says "Globex".
--   Alice aaaaaaaa-0000-4000-8000-000000000001  member of Acme
--   Bob   bbbbbbbb-0000-4000-8000-000000000002  member of Globex
--   Carol cccccccc-0000-4000-8000-000000000003  member of nothing

insert into public.organizations (id, name) values
  ('a0000000-0000-4000-8000-000000000000', 'Acme'),
  ('b0000000-0000-4000-8000-000000000000', 'Globex');

insert into public.memberships (user_id, org_id, role) values
  ('aaaaaaaa-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000000', 'admin'),
  ('bbbbbbbb-0000-4000-8000-000000000002', 'b0000000-0000-4000-8000-000000000000', 'admin');

insert into public.projects (id, org_id, name, status, description) values
  ('a1000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000000', 'Acme Rocket', 'active', 'Acme rocket-powered roller skates'),
  ('a1000000-0000-4000-8000-000000000002', 'a0000000-0000-4000-8000-000000000000', 'Acme Anvil', 'active', 'Acme portable anvil'),
  ('a1000000-0000-4000-8000-000000000003', 'a0000000-0000-4000-8000-000000000000', 'Acme Old Catapult', 'archived', 'Acme catapult, retired'),
  ('b1000000-0000-4000-8000-000000000001', 'b0000000-0000-4000-8000-000000000000', 'Globex Secret Plan', 'active', 'Globex plan to take over the east coast'),
  ('b1000000-0000-4000-8000-000000000002', 'b0000000-0000-4000-8000-000000000000', 'Globex Doomsday Device', 'active', 'Globex doomsday device'),
  ('b1000000-0000-4000-8000-000000000003', 'b0000000-0000-4000-8000-000000000000', 'Globex Retired Laser', 'archived', 'Globex laser, decommissioned');

insert into public.documents (id, project_id, title, body, created_by) values
  ('a2000000-0000-4000-8000-000000000001', 'a1000000-0000-4000-8000-000000000001', 'Acme Rocket launch checklist',
   'Fuel the Acme rocket, check the skates, launch at dawn. Acme confidential.', 'aaaaaaaa-0000-4000-8000-000000000001'),
  ('a2000000-0000-4000-8000-000000000002', 'a1000000-0000-4000-8000-000000000001', 'Acme Rocket budget',
   'Acme budget: 3 rockets, 1 coyote. Acme confidential.', 'aaaaaaaa-0000-4000-8000-000000000001'),
  ('a2000000-0000-4000-8000-000000000003', 'a1000000-0000-4000-8000-000000000002', 'Acme Anvil drop test',
   'Acme anvil dropped from 100 m: no damage to the anvil. Acme confidential.', 'aaaaaaaa-0000-4000-8000-000000000001'),
  ('b2000000-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000001', 'Globex Secret Plan step 1',
   'Globex will acquire the east coast. Launch at midnight. Globex confidential.', 'bbbbbbbb-0000-4000-8000-000000000002'),
  ('b2000000-0000-4000-8000-000000000002', 'b1000000-0000-4000-8000-000000000001', 'Globex launch codes',
   'Globex launch codes: 0000. Globex confidential.', 'bbbbbbbb-0000-4000-8000-000000000002'),
  ('b2000000-0000-4000-8000-000000000003', 'b1000000-0000-4000-8000-000000000002', 'Globex Doomsday Device blueprint',
   'Globex doomsday device wiring. Globex confidential.', 'bbbbbbbb-0000-4000-8000-000000000002');
