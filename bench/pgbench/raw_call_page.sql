select * from mcp.list_projects('archived');
